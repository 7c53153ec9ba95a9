import type { Chooser } from "./chooser.js";
import type { HistoryFaultInjector } from "./faults.js";
import { hash32 } from "./prng.js";
import type { VirtualScheduler } from "./virtual-time.js";

/**
 * A stream on virtual time, as Lambda's event source mapping reads Kinesis or DynamoDB Streams: records in shards,
 * each shard read in order from its checkpoint, one batch in flight per lane (a shard has `lanes` lanes, the
 * parallelization factor; a partition key's records all in one lane), a child shard only after its parent is read to
 * its end. An answer moves the lane's checkpoint: past the batch, or to its first failed record; a timed-out or
 * failed invocation moves nothing and may halve the next batch (bisect). A lane whose batch failed is retried after a
 * delay doubling from 50 ms to 1 s (as the local event source's), so that its retries outlast a lease. Faults: the producer puts a record twice (a
 * retried put: one more sequence number), a shard is split mid-stream, a checkpoint is lost after a good batch (the
 * batch comes again: at least once), a batch past `maxAttempts` invocations is discarded (the on-failure
 * destination: `dlq`).
 */
export interface StreamRecord {
  /** The sequence number: increasing in the order the stream took the records. */
  readonly seq: number;
  readonly event: number;
  readonly partitionKey: string;
  readonly shard: number;
}

export interface StreamOptions {
  shards: number;
  /** Lanes per shard (parallelization factor). */
  lanes: number;
  /** Split shard 0 after this many of the stream's records (its later ones go to two children); none when undefined. */
  splitAfter: number | undefined;
  /** Invocations of a batch before it is discarded. */
  maxAttempts: number;
  /** Bisect a batch whose invocation failed as a whole. */
  bisect: boolean;
  /** An invocation must end by `now + timeoutMs`. */
  timeoutMs: number;
  /** BROKEN_STREAMS `checkpoint-past-failures`: the checkpoint moves past every batch whatever its answer. */
  checkpointPastFailures?: boolean;
}

/** A batch handed out: its lane and records, and the invocation's deadline. */
export interface StreamBatch {
  readonly lane: Lane;
  readonly records: readonly StreamRecord[];
  readonly attempt: number;
  readonly deadline: number;
}

interface Shard {
  readonly id: number;
  readonly parent: number | undefined;
  readonly lanes: Lane[];
}

export interface Lane {
  readonly shard: number;
  readonly records: StreamRecord[];
  /** The checkpoint: records before it are done. */
  next: number;
  inFlight: boolean;
  /** Failed invocations of the record at the checkpoint. */
  attempts: number;
  /** The next batch's most records (bisect halves it). */
  limit: number;
  /** When a failed batch may be tried again (virtual ms). */
  retryAt: number;
}

export class SimStream {
  readonly #shards: Shard[] = [];
  #seq = 1000;

  constructor(
    /** Where the events of a discarded batch go, as a queue's dead-letter queue holds them. */
    readonly dlq: number[],
    readonly sim: VirtualScheduler,
    readonly chooser: Chooser,
    readonly faults: HistoryFaultInjector,
    readonly o: StreamOptions,
    /** Events in the order the producers put them, each with its partition key. */
    puts: readonly { event: number; partitionKey: string }[],
  ) {
    const shard = (id: number, parent?: number): Shard => ({
      id,
      parent,
      lanes: Array.from({ length: o.lanes }, () => ({
        shard: id,
        records: [],
        next: 0,
        inFlight: false,
        attempts: 0,
        limit: Number.POSITIVE_INFINITY,
        retryAt: 0,
      })),
    });
    for (let i = 0; i < o.shards; i++) this.#shards.push(shard(i));
    let put = 0;
    for (const p of puts) {
      if (o.splitAfter !== undefined && put === o.splitAfter) {
        this.#shards.push(shard(this.#shards.length, 0), shard(this.#shards.length + 1, 0));
        faults.count("split");
      }
      this.#append(p);
      put++;
      if (chooser.chance(faults.config.duplicateRate)) {
        faults.count("producer-duplicate");
        this.#append(p);
      }
    }
  }

  /** The shard a partition key's records go to now: after a split, shard 0's keys go to its children. */
  #append(p: { event: number; partitionKey: string }): void {
    const h = hash32(p.partitionKey);
    let shard = h % this.o.shards;
    if (shard === 0 && this.#shards.length > this.o.shards) shard = this.o.shards + ((h >>> 8) % 2);
    const lane = (this.#shards[shard] as Shard).lanes[(h >>> 4) % this.o.lanes] as Lane;
    lane.records.push({ seq: this.#seq++, event: p.event, partitionKey: p.partitionKey, shard });
  }

  /** Every record of every shard is past its checkpoint (done or discarded). */
  get done(): boolean {
    return this.#shards.every((s) => s.lanes.every((l) => l.next >= l.records.length && !l.inFlight));
  }

  #readable(s: Shard): boolean {
    if (s.parent === undefined) return true;
    const parent = this.#shards[s.parent] as Shard;
    return parent.lanes.every((l) => l.next >= l.records.length && !l.inFlight);
  }

  /** A batch of a lane with records and none in flight (chosen), or how long to wait, or `done`. */
  take(maxBatch: number): StreamBatch | { waitMs: number } | "done" {
    if (this.done) return "done";
    const waiting = this.#shards
      .filter((s) => this.#readable(s))
      .flatMap((s) => s.lanes)
      .filter((l) => !l.inFlight && l.next < l.records.length);
    const now = this.sim.now;
    const open = waiting.filter((l) => l.retryAt <= now);
    if (open.length === 0) {
      const next = Math.min(...waiting.map((l) => l.retryAt));
      return { waitMs: Number.isFinite(next) ? Math.max(1, next - now) : 20 };
    }
    const lane = open[this.chooser.choose(open.length, "receive")] as Lane;
    const size = Math.min(lane.limit, this.chooser.int(1, maxBatch));
    lane.inFlight = true;
    return {
      lane,
      records: lane.records.slice(lane.next, lane.next + size),
      attempt: lane.attempts + 1,
      deadline: this.sim.now + this.o.timeoutMs,
    };
  }

  /**
   * The invocation's answer: `failedAt` the index of the first failed record in the batch (-1: none failed; 0 with
   * `whole`: the invocation failed or timed out). Moves the checkpoint, or discards the batch past its attempts.
   */
  answer(b: StreamBatch, failedAt: number, whole: boolean): void {
    const lane = b.lane;
    lane.inFlight = false;
    if (failedAt === -1 || this.o.checkpointPastFailures) {
      if (this.chooser.chance(this.faults.config.duplicateRate)) {
        // The checkpoint was not saved: the same records come again.
        this.faults.count("checkpoint-lost");
        return;
      }
      lane.next += b.records.length;
      lane.attempts = 0;
      lane.limit = Number.POSITIVE_INFINITY;
      return;
    }
    lane.next += failedAt;
    lane.attempts = failedAt > 0 ? 1 : lane.attempts + 1;
    if (lane.attempts >= this.o.maxAttempts) {
      for (const r of b.records.slice(failedAt)) this.dlq.push(r.event);
      lane.next += b.records.length - failedAt;
      lane.attempts = 0;
      lane.limit = Number.POSITIVE_INFINITY;
      return;
    }
    lane.retryAt = this.sim.now + Math.min(1000, 50 * 2 ** (lane.attempts - 1));
    if (whole && this.o.bisect && b.records.length > 1) {
      this.faults.count("bisect");
      lane.limit = Math.ceil(b.records.length / 2);
    }
  }
}
