import type { DeliveryStatus } from "../../core/outcomes.js";
import type { LocalRuntime } from "../../local/runtime.js";
import type { DemoStates } from "./state-stores.js";

/**
 * A reference pipeline the demo runs twice, guard off and on. Scenarios live in `examples/`; the
 * demo machinery here only knows this interface.
 */
export type ScenarioName = "records" | "images" | "orders" | "totals";
export const SCENARIO_NAMES: readonly ScenarioName[] = ["records", "images", "orders", "totals"];

export interface ScenarioRunContext {
  runtime: LocalRuntime;
  guard: boolean;
  seed: number;
  /** Multiplies the scenario's sizes: 1 for the demo, less in tests (same code path). */
  scale: number;
  /** Unique prefix for this run's buckets, tables and queues (lower-case, S3-safe). */
  prefix: string;
  /** The Lambda function names of this run must start with this (deliveries and runs are counted by it). */
  functionPrefix: string;
  /** Where the guard's state is kept (`eonce demo --state-store`); absent: the runtime's DynamoDB Local. */
  states?: DemoStates;
}

/** What the stores and buckets hold after the run, counted there (not from the runtime's bookkeeping). */
export interface MeasuredEffects {
  distinctEvents: number;
  /** Effects beyond one per distinct event. */
  duplicateEffects: number;
  /** Subjects whose final result is not from their newest event. */
  staleResults: number;
  /** Distinct events neither processed nor legitimately skipped. */
  lostEvents: number;
}

/** The deliveries of one key, for a timeline chart. */
export interface KeyTimeline {
  key: string;
  caption: string;
  lanes: string[];
  entries: TimelineEntry[];
}

/** One delivery of the key shown on the timeline, with how it ended. */
export interface TimelineEntry {
  /** Since the key's first upload: when the delivery was handed to the function. */
  atMs: number;
  /** When its run ended (for a zombie: when its code finally finished). */
  endMs: number;
  /** Which event of the key (e.g. `cat`, `dog`). */
  lane: string;
  outcome: TimelineOutcome;
  /** The source sent it again (duplicate fault), or it is a retry/redelivery (attempt > 1). */
  duplicate: boolean;
  attempt: number;
}

/** A delivery status of core/outcomes.ts, or what only the runtime sees: how the claim was taken, how the run ended. */
export type TimelineOutcome =
  | Extract<
      DeliveryStatus,
      "processed" | "duplicate" | "stale" | "lease-lost" | "busy" | "in-flight" | "failed"
    >
  | "superseded"
  | "took-over"
  | "timed-out"
  | "crashed";

export interface ScenarioResult {
  measured: MeasuredEffects;
  /** Extra counts for the report, e.g. `crashed runs`, `dead-lettered`. */
  details: Record<string, number>;
  /** Sentences for the report (what the run shows). */
  notes: string[];
  /** Timelines of single keys, each with a caption (why this key). */
  timelines?: KeyTimeline[];
  /** Small pictures for the report (data URIs), e.g. output images. */
  samples?: { label: string; dataUri: string }[];
  /** Rough number of handler runs the scenario expects, for the progress bar. */
  expectedRuns?: number;
}

export interface Scenario {
  name: ScenarioName;
  title: string;
  /** One paragraph: the pipeline, the faults, what guard off and on should show. */
  description: string;
  /**
   * The guarded handler folds its effect into DynamoDB's commit transaction (a DynamoDB fenced sink's `putAtCommit`):
   * only a DynamoDB state store can commit it, so `eonce demo --state-store` of another engine leaves it out.
   */
  foldsIntoDynamoDB?: boolean;
  /** For the progress bar, before the run. */
  expectedRuns(scale: number): number;
  run(ctx: ScenarioRunContext): Promise<ScenarioResult>;
}
