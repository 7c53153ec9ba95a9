import type { S3EventRecord } from "aws-lambda";
import type { Refusal } from "../../core/state.js";
import type { RunFaults } from "./faults.js";

/** How a source handed events to a function. */
export type SourceKind = "direct" | "eventbridge" | "sqs" | "kinesis" | "dynamodb-streams";

/** Final state of one run of a function, as the Lambda service sees it. */
export type RunStatus = "succeeded" | "failed" | "timed-out" | "crashed";

/**
 * What the runtime did, in order: the raw material for progress bars, reports and timelines. These are
 * the runtime's own records; effect counts in reports come from the stores, never from here.
 */
export type TraceEvent =
  /** S3 accepted a change and emitted this notification record (before any routing or fault). */
  | { type: "s3-event"; atMs: number; record: S3EventRecord }
  | {
      type: "delivery";
      atMs: number;
      source: SourceKind;
      functionName: string;
      requestId: string;
      runId: string;
      /** Correlation ids of the records in the invocation (S3 request id, EventBridge id, SQS message id). */
      records: string[];
      /** 1 for a first delivery, then async retry number or the highest SQS receive count in the batch. */
      attempt: number;
      /** Sent again by the duplicate fault. */
      duplicate: boolean;
    }
  | {
      type: "run";
      atMs: number;
      functionName: string;
      requestId: string;
      runId: string;
      status: RunStatus;
      durationMs: number;
      faults: RunFaults;
      error?: string;
      /** Slowness or a crash was drawn but the handler reached no faultPoint(): applied after it returned. */
      faultPointMissed?: boolean;
    }
  /** A run that timed out or crashed kept running (zombie) and has now finished. */
  | { type: "zombie-end"; atMs: number; functionName: string; runId: string; error?: string }
  /**
   * Async invoke gave up after its retries (on-failure destination), SQS moved a message to its DLQ, or a stream
   * event source discarded a batch (its retries or record age exhausted) to its on-failure destination.
   */
  | { type: "dead-letter"; atMs: number; source: SourceKind; functionName: string; records: string[] }
  /** `runId` is empty when the store was called outside a local run. */
  | {
      type: "guard";
      atMs: number;
      runId: string;
      key: string;
      step: GuardStep;
      position: string;
      fence?: number;
    };

/**
 * A step of the guard protocol as the state store saw it (see instrumented-store.ts): a claim (plain, taken over
 * from an expired holder, or superseding a live older one), a refusal as core/state.ts classifies it (a fence
 * refusal is no step: the guard claims again), a commit, a lost lease, a release.
 */
export type GuardStep =
  | "claimed"
  | "took-over"
  | "superseded"
  | Exclude<Refusal["kind"], "fence">
  | "committed"
  | "lease-lost"
  | "released";

/** Called with each trace event as it happens. */
export type TraceListener = (event: TraceEvent) => void;

/** What the runtime did, in order (S3 events, deliveries, runs, zombies, dead letters, guard steps). */
export class Trace {
  readonly events: TraceEvent[] = [];
  readonly #listeners = new Set<TraceListener>();

  /** Records an event and hands it to the listeners. */
  emit(event: TraceEvent): void {
    this.events.push(event);
    for (const listener of this.#listeners) listener(event);
  }

  /** Calls `listener` with every event from now on; returns the unsubscribe function. */
  subscribe(listener: TraceListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Forgets the recorded events. */
  clear(): void {
    this.events.length = 0;
  }
}
