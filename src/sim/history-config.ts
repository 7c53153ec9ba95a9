import type { FaultConfig } from "./faults.js";

/** How the guard under test is configured in a history. */
export interface GuardSettings {
  leaseMs: number;
  heartbeatMs: number;
  clockSkewMs: number;
  busy: "wait" | "retry" | "supersede";
  inFlight: "wait" | "retry";
  waitIntervalMs: number;
  maxWaitIntervalMs: number;
}

/** How an event is handled; fixed per event in exhaustive runs, chosen per delivery otherwise. */
export type Mode = "run-atomic" | "run-direct" | "apply";

export interface HistoryConfig {
  workers: number;
  /** Ordered subjects and events per subject (positions 1..n). */
  subjects: number;
  eventsPerSubject: number;
  /** Dedupe-only events (no position, one subject). */
  dedupeEvents: number;
  guard: GuardSettings;
  /** Each worker's clock offset (ms). */
  offsets: number[];
  /**
   * The bound the clocks keep, by which a history is "within skew" (default: the guard's clockSkewMs). A test of
   * a misconfigured guard sets the guard's lower than the clocks' real bound.
   */
  declaredSkewMs?: number;
  faults: FaultConfig;
  /** Fixed modes per event (exhaustive), else chosen per delivery with these shares. */
  modes?: Mode[];
  applyShare: number;
  directShare: number;
  /** Handler work time (virtual ms) is uniform in [minWorkMs, maxWorkMs] (exhaustive runs: always the minimum). */
  minWorkMs?: number;
  maxWorkMs: number;
  source: {
    visibilityMs: number;
    retryDelayMs: readonly [number, number];
    maxReceives: number;
    reorder: boolean;
  };
  /** Extra messages of event 0 in the initial queue (duplicate deliveries racing from the start). */
  extraCopies: number;
  /** How often time may move on while store calls wait (slow requests), as a scheduling choice. */
  maxPostpone?: number;
  maxSteps: number;
  maxVirtualMs: number;
}
