import type { Chooser } from "./chooser.js";

/** Faults injected at the StateStore boundary, decided per store call. */
export type StoreFaultKind =
  /** Throw a retryable StoreError without calling the store: the request never landed. */
  | "fail-before"
  /** Call the store, then throw a retryable StoreError: it landed, the caller does not know. */
  | "lose-response"
  /** A slow request: a virtual sleep, then the call. */
  | "delay"
  /** An outage: a long virtual sleep (past the lease), then a retryable StoreError without calling the store. */
  | "hang";

export const STORE_FAULTS: readonly StoreFaultKind[] = ["fail-before", "lose-response", "delay", "hang"];

/** Every fault kind counted in a run's summary. */
export type FaultKind =
  | StoreFaultKind
  /** A holder's handler sleeps past its lease while its renewals are frozen, then carries on (a zombie). */
  | "pause"
  /** A worker's clock runs off the others', within the guard's clockSkewMs. */
  | "skew-within"
  /** ... beyond it: such histories are counted apart (only what fencing guarantees is checked). */
  | "skew-beyond"
  /** TTL deletes a state item (one whose holder's lease ended and that holds no committed event). */
  | "ttl-delete"
  /** The source delivers a message twice. */
  | "duplicate"
  /** A message is delivered out of its enqueue order. */
  | "reorder"
  /** Wrapper histories: the user's handler throws (an Error, or a retryable StoreError of its own store). */
  | "handler-error"
  /** SQL servers: workers cold-start at once beside live traffic, each running the engine's migrations. */
  | "cold-start"
  /** SQL servers: a long transaction holds a lock on the live table while a cold start runs. */
  | "reader"
  /** `--failover` (engines whose `serverFaults` name it): the server fails over to a replica that lacks the last acknowledged writes. */
  | "failover"
  /** `--failover --wait-for-replicas`: the wait for a replica timed out, the step landed on the primary only. */
  | "wait-timeout"
  /** Someone else wrote an effect target before the history (foreign-values.ts). */
  | "foreign-value"
  /** Stream histories: a producer's retried put, one more record of an event under a new sequence number. */
  | "producer-duplicate"
  /** Stream histories: shard 0 split into two children mid-stream. */
  | "split"
  /** Stream histories: a batch's checkpoint was not saved after it succeeded, so its records come again. */
  | "checkpoint-lost"
  /** Stream histories: a failed invocation's batch halved before its retry. */
  | "bisect"
  /** Outbox histories: a relay's send failed before the destination had it. */
  | "send-failed"
  /** Outbox histories: the destination took a relay's send, whose response was lost (the relay thinks it failed). */
  | "send-lost"
  /** Outbox histories: a relay crashed after a send before marking it, or after a claim (a new copy starts). */
  | "relay-crash"
  /** Outbox histories: a relay stalled about to send until its lease ran out, then sent (late, a duplicate). */
  | "relay-stall"
  /** ... for longer than a FIFO destination's deduplication window: its late send is delivered again. */
  | "stall-past-dedupe"
  /** Outbox histories: a relay's claim landed, its response lost (the entries wait for the lease to end). */
  | "claim-lost"
  /** Outbox histories: a relay's markSent landed, its response lost. */
  | "mark-lost"
  /** Outbox histories: a relay's markSent failed before landing. */
  | "mark-failed"
  /** Outbox histories: a FIFO destination dropped a send within the deduplication window of an earlier one. */
  | "deduplicated"
  /** ... and enqueued again a send of an id after that window: the message is delivered again. */
  | "dedupe-expired";

export type FaultCounts = Partial<Record<FaultKind, number>>;

export interface FaultConfig {
  /** Share of store calls that get a store fault (random mode). */
  storeRate: number;
  storeKinds: readonly StoreFaultKind[];
  /** Most store faults, pauses and TTL deletions in one history, so every history can finish. */
  max: number;
  /** Share of `run` handlers that pause (zombie). */
  pauseRate: number;
  /** Share of steps at which TTL may delete an eligible item. */
  ttlRate: number;
  /** Share of deliveries duplicated by the source. */
  duplicateRate: number;
  /** Messages become visible after a random delay up to this (reordering). */
  reorderWindowMs: number;
}

export const NO_HISTORY_FAULTS: FaultConfig = {
  storeRate: 0,
  storeKinds: [],
  max: 0,
  pauseRate: 0,
  ttlRate: 0,
  duplicateRate: 0,
  reorderWindowMs: 0,
};

/**
 * Decides the faults of one history from its chooser, within the budget. In exhaustive mode (`enumerate`) each
 * store call is a branch point over "no fault" and every kind while the budget lasts.
 */
export class HistoryFaultInjector {
  readonly counts: FaultCounts = {};
  #used = 0;
  constructor(
    readonly config: FaultConfig,
    readonly chooser: Chooser,
    readonly enumerate: boolean,
  ) {}

  count(kind: FaultKind, n = 1): void {
    this.counts[kind] = (this.counts[kind] ?? 0) + n;
  }

  #take(kind: FaultKind): FaultKind {
    this.#used++;
    this.count(kind);
    return kind;
  }

  get budgetLeft(): boolean {
    return this.#used < this.config.max;
  }

  storeFault(op: string): StoreFaultKind | undefined {
    const kinds = this.config.storeKinds;
    if (kinds.length === 0 || !this.budgetLeft) return undefined;
    if (this.enumerate) {
      const c = this.chooser.choose(kinds.length + 1, `fault ${op}`);
      return c === 0 ? undefined : (this.#take(kinds[c - 1] as StoreFaultKind) as StoreFaultKind);
    }
    if (!this.chooser.chance(this.config.storeRate)) return undefined;
    return this.#take(
      kinds[this.chooser.choose(kinds.length, "fault kind")] as StoreFaultKind,
    ) as StoreFaultKind;
  }

  pause(): boolean {
    if (!this.budgetLeft || this.config.pauseRate <= 0) return false;
    if (this.enumerate ? this.chooser.choose(2, "pause") === 1 : this.chooser.chance(this.config.pauseRate)) {
      this.#take("pause");
      return true;
    }
    return false;
  }

  ttl(): boolean {
    if (!this.budgetLeft || this.config.ttlRate <= 0) return false;
    return this.chooser.chance(this.config.ttlRate);
  }

  tookTtl(): void {
    this.#take("ttl-delete");
  }
}

export function addCounts(into: FaultCounts, from: FaultCounts): void {
  for (const [k, v] of Object.entries(from) as [FaultKind, number][]) into[k] = (into[k] ?? 0) + v;
}
