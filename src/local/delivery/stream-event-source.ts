import { boolean, func, integer, nested, resolveOptions, schemaFor } from "../../core/options.js";
import { FaultInjector, type FaultOptions, resolveFaults } from "../../sim/live/faults.js";
import type { Simulation } from "../../sim/live/simulation.js";
import { hash32 } from "../../sim/prng.js";
import { isDuration, numberField } from "../fields.js";
import { invokeBatch } from "./batch-invoke.js";
import type { LocalFunction, LocalInvocationResult } from "./local-function.js";
import { PollLoop } from "./poll-loop.js";
import type { ReadRecord, StreamReader, StreamShard } from "./stream-reader.js";

/** Lambda's stream event source mapping, as `eonce run` configures it (defaults: the CDK construct's). */
export interface StreamEventSourceOptions {
  /** Records per invocation. Default 100 (Lambda's default for streams). */
  batchSize?: number;
  /** Batches of one shard in flight at once, each for its own share of the partition keys. Default 1. */
  parallelizationFactor?: number;
  /** Honour `{ batchItemFailures }`: retry from the first failed record. Default true. */
  reportBatchItemFailures?: boolean;
  /** After a failed invocation, retry each half of the batch on its own. Default true. */
  bisectBatchOnError?: boolean;
  /** Retries of a failing batch before it is discarded to the on-failure destination; -1: until it expires. Default 10. */
  maxRetryAttempts?: number;
  /** Records older than this are discarded unread by the function. Default: no limit (-1). */
  maxRecordAgeMs?: number;
  /** Pause between reads that found nothing, and the first retry's delay (each next one doubles it). Default 50. */
  pollIntervalMs?: number;
  /** The longest delay between two retries of a failing batch. Default 1 000. */
  maxRetryDelayMs?: number;
  /** What a discarded batch's metadata goes to (Lambda: an SQS queue or SNS topic). Default: kept in `discarded`. */
  onFailure?: (batch: DiscardedBatch) => void | Promise<void>;
  /** Delivery faults: `duplicateRate`, a batch invoked twice (Lambda's at-least-once); run faults are the function's. */
  faults?: FaultOptions;
}

/** What Lambda sends the on-failure destination of a stream: the batch's metadata, not its records. */
export interface DiscardedBatch {
  condition: "RetryAttemptsExhausted" | "RecordAgeExceeded";
  approximateInvokeCount: number;
  streamArn: string;
  shardId: string;
  startSequenceNumber: string;
  endSequenceNumber: string;
  batchSize: number;
}

export const STREAM_EVENT_SOURCE_OPTIONS = schemaFor<StreamEventSourceOptions>()({
  batchSize: integer({ min: 1, max: 10_000, default: 100, doc: "stream batch size" }),
  parallelizationFactor: integer({ min: 1, max: 10, default: 1, doc: "concurrent batches per shard" }),
  reportBatchItemFailures: boolean({ default: true }),
  bisectBatchOnError: boolean({ default: true, doc: "split a failed batch in two before retrying" }),
  maxRetryAttempts: integer({
    min: -1,
    max: 10_000,
    default: 10,
    doc: "retries before a batch is discarded",
  }),
  maxRecordAgeMs: numberField("-1 or a non-negative number of ms", (n) => n === -1 || isDuration(n), {
    default: -1,
    doc: "discard records older than this",
  }),
  pollIntervalMs: numberField("a non-negative number of ms", isDuration, { default: 50 }),
  maxRetryDelayMs: numberField("a non-negative number of ms", isDuration, { default: 1000 }),
  onFailure: func<(batch: DiscardedBatch) => void | Promise<void>>(),
  faults: nested(resolveFaults),
});

type Resolved = Required<Omit<StreamEventSourceOptions, "faults" | "onFailure">>;

/** What a shard worker uses of its event source: the settings, the stream, the clock, and invoking and discarding. */
interface ShardContext {
  readonly options: Resolved;
  readonly reader: StreamReader;
  readonly sim: Simulation;
  running(): boolean;
  invoke(records: ReadRecord[], attempt: number): Promise<LocalInvocationResult>;
  discard(
    shardId: string,
    records: ReadRecord[],
    condition: DiscardedBatch["condition"],
    invokes: number,
  ): Promise<void>;
}

/**
 * Lambda's event source mapping for Kinesis and DynamoDB Streams: reads each shard in order (a child only after its
 * parents are read to their end), invokes the function with batches of one shard, and moves the shard's checkpoint
 * as the answer says:
 * - success: past the batch; `batchItemFailures`: up to the first listed record (Lambda takes the lowest sequence
 *   number), and the batch is retried from there; an identifier that is empty or not in the batch, a throw, a
 *   timeout or a crash: the whole batch failed.
 * - a failed batch is retried after a delay that doubles from `pollIntervalMs` up to `maxRetryDelayMs` (so that ten
 *   retries outlast a lease held by a run that timed out); with `bisectBatchOnError` a whole-batch failure halves the
 *   next batch first, so that
 *   a poison record is found; past `maxRetryAttempts` retries, or when its first record is older than
 *   `maxRecordAgeMs`, the batch is discarded to the on-failure destination and the shard moves on.
 * - `parallelizationFactor` > 1: each shard's partition keys are hashed into that many lanes, a batch in flight per
 *   lane; a key's records keep their order.
 */
export class StreamEventSource {
  readonly #fn: LocalFunction;
  readonly #reader: StreamReader;
  readonly #o: Resolved;
  readonly #onFailure: ((batch: DiscardedBatch) => void | Promise<void>) | undefined;
  readonly #faults: FaultInjector;
  readonly #sim: Simulation;
  readonly #shards = new Map<string, ShardWorker>();
  readonly #context: ShardContext;
  /** Batches discarded to the on-failure destination, in order. */
  readonly discarded: DiscardedBatch[] = [];
  readonly #loop: PollLoop;

  constructor(fn: LocalFunction, reader: StreamReader, options: StreamEventSourceOptions, sim: Simulation) {
    const { faults, onFailure, ...o } = resolveOptions(
      "stream event source",
      STREAM_EVENT_SOURCE_OPTIONS,
      options,
    );
    this.#fn = fn;
    this.#reader = reader;
    this.#o = o;
    this.#onFailure = onFailure;
    this.#faults = new FaultInjector(faults, sim.prng.fork(`stream:${fn.name}:${reader.streamArn}`));
    this.#sim = sim;
    this.#loop = new PollLoop(sim.sleeper);
    this.#context = {
      options: o,
      reader,
      sim,
      running: () => this.#loop.running,
      invoke: (records, attempt) => this.#invoke(records, attempt),
      discard: (shardId, records, condition, invokes) => this.#discard(shardId, records, condition, invokes),
    };
  }

  get source(): StreamReader["source"] {
    return this.#reader.source;
  }

  /** Starts reading the stream (once; a second call does nothing). */
  start(): void {
    this.#loop.start(() => this.#discover());
  }

  /** Stops reading; batches in flight finish on their own (the runtime's activity tracks them). */
  async stop(): Promise<void> {
    await this.#loop.stop();
    await Promise.all([...this.#shards.values()].map((w) => w.done));
  }

  /** What `idle` names when this source does not drain. */
  describe(): string {
    return `the stream event source of ${this.#fn.name}`;
  }

  /** True when every shard is read to what it holds now and no batch is in flight or waiting for a retry. */
  async drained(): Promise<boolean> {
    const shards = await this.#reader.listShards();
    for (const shard of shards) {
      const worker = this.#shards.get(shard.shardId);
      if (!worker) return false;
      if (!(await worker.idle())) return false;
    }
    return true;
  }

  /** Lists the shards now and then; a shard starts once its parents are read to their end. */
  async #discover(): Promise<void> {
    while (this.#loop.running) {
      let shards: StreamShard[] = [];
      try {
        shards = await this.#reader.listShards();
      } catch {
        // A stopping server or a transient error: the poller tries again.
      }
      const known = new Set(shards.map((s) => s.shardId));
      for (const shard of shards) {
        if (this.#shards.has(shard.shardId)) continue;
        // A parent past the stream's retention is no longer listed: nothing of it is left to read.
        const parents = shard.parentShardIds.filter((p) => known.has(p));
        if (!parents.every((p) => this.#shards.get(p)?.ended)) continue;
        const worker = new ShardWorker(shard.shardId, this.#context);
        this.#shards.set(shard.shardId, worker);
        worker.start();
      }
      await this.#sim.sleeper.sleep(this.#o.pollIntervalMs);
    }
  }

  /** One invocation with `records` (and a second one when the duplicate fault hits): the first answer counts. */
  async #invoke(records: ReadRecord[], attempt: number): Promise<LocalInvocationResult> {
    const { delaysMs } = this.#faults.forDelivery();
    // Tracked, so that the runtime waits for them (the shards' read loops are not: an open shard never ends).
    const runs = delaysMs.map((delayMs, copy) =>
      this.#sim.activity.track(this.#dispatch(records, attempt, delayMs, copy > 0)),
    );
    return (await runs[0]) as LocalInvocationResult;
  }

  #dispatch(
    records: ReadRecord[],
    attempt: number,
    delayMs: number,
    duplicate: boolean,
  ): Promise<LocalInvocationResult> {
    return invokeBatch(this.#sim, this.#fn, {
      source: this.#reader.source,
      event: { Records: records.map((r) => r.lambdaRecord) },
      records: records.map((r) => r.sequenceNumber),
      attempt,
      delayMs,
      duplicate,
    });
  }

  /** A batch given up on: its metadata to the on-failure destination, as Lambda sends it. */
  async #discard(
    shardId: string,
    records: ReadRecord[],
    condition: DiscardedBatch["condition"],
    invokes: number,
  ): Promise<void> {
    const batch: DiscardedBatch = {
      condition,
      approximateInvokeCount: invokes,
      streamArn: this.#reader.streamArn,
      shardId,
      startSequenceNumber: records[0]?.sequenceNumber ?? "",
      endSequenceNumber: records.at(-1)?.sequenceNumber ?? "",
      batchSize: records.length,
    };
    this.discarded.push(batch);
    this.#sim.trace.emit({
      type: "dead-letter",
      atMs: this.#sim.now(),
      source: this.#reader.source,
      functionName: this.#fn.name,
      records: records.map((r) => r.sequenceNumber),
    });
    await this.#onFailure?.(batch);
  }
}

/** One shard: its records read in order into lanes (by partition key), each lane's batches one at a time. */
class ShardWorker {
  readonly shardId: string;
  readonly #source: ShardContext;
  readonly #lanes: Lane[];
  /** The last sequence number read from the shard. */
  #readTo: string | undefined;
  #readEnded = false;
  #reading: Promise<void> | undefined;
  /** Read to its end and every record of it done: its children may start. */
  ended = false;
  done: Promise<void> = Promise.resolve();

  constructor(shardId: string, source: ShardContext) {
    this.shardId = shardId;
    this.#source = source;
    const { batchSize, parallelizationFactor } = source.options;
    this.#lanes = Array.from({ length: parallelizationFactor }, () => ({
      pending: [],
      attempts: 0,
      limit: batchSize,
      busy: false,
    }));
  }

  start(): void {
    this.done = Promise.all(this.#lanes.map((lane) => this.#run(lane))).then(() => {
      this.ended = this.#readEnded && this.#lanes.every((l) => l.pending.length === 0);
    });
  }

  /** Nothing pending or in flight, and nothing new in the shard. */
  async idle(): Promise<boolean> {
    if (this.ended) return true;
    if (this.#lanes.some((l) => l.busy || l.pending.length > 0)) return false;
    if (this.#readEnded) return true;
    const probe = await this.#source.reader.read(this.shardId, this.#readTo, 1);
    return probe.records.length === 0;
  }

  async #run(lane: Lane): Promise<void> {
    const { sim } = this.#source;
    while (this.#source.running()) {
      if (lane.pending.length === 0) {
        if (this.#readEnded) return;
        const before = this.#readTo;
        await this.#readMore();
        if (lane.pending.length === 0) {
          if (this.#readEnded) return;
          // Nothing new for this lane (or the read failed): wait before asking again.
          if (this.#readTo === before) await sim.sleeper.sleep(this.#source.options.pollIntervalMs);
          continue;
        }
      }
      lane.busy = true;
      try {
        await this.#batch(lane);
      } finally {
        lane.busy = false;
      }
    }
  }

  /** One read of the shard, shared by its lanes: each record to the lane of its partition key. */
  #readMore(): Promise<void> {
    this.#reading ??= (async () => {
      const { reader, options } = this.#source;
      try {
        const read = await reader.read(this.shardId, this.#readTo, options.batchSize * this.#lanes.length);
        for (const r of read.records) {
          (this.#lanes[laneOf(r.partitionKey, this.#lanes.length)] as Lane).pending.push(r);
          this.#readTo = r.sequenceNumber;
        }
        if (read.ended) this.#readEnded = true;
      } catch {
        // A transient error or a stopping server: read again on the next turn.
      } finally {
        this.#reading = undefined;
      }
    })();
    return this.#reading;
  }

  /** One batch of the lane: invoked, then the lane's checkpoint moved as its answer says. */
  async #batch(lane: Lane): Promise<void> {
    const { options: o, sim } = this.#source;
    const batch = lane.pending.slice(0, lane.limit);
    const first = batch[0] as ReadRecord;
    if (o.maxRecordAgeMs >= 0 && sim.now() - first.arrivalMs > o.maxRecordAgeMs) {
      const aged = batch.filter((r) => sim.now() - r.arrivalMs > o.maxRecordAgeMs);
      lane.pending.splice(0, aged.length);
      await this.#source.discard(this.shardId, aged, "RecordAgeExceeded", lane.attempts);
      reset(lane, o.batchSize);
      return;
    }
    const run = await this.#source.invoke(batch, lane.attempts + 1);
    const failedAt = failedIndex(run, batch, o.reportBatchItemFailures);
    if (failedAt === -1) {
      lane.pending.splice(0, batch.length);
      reset(lane, o.batchSize);
      return;
    }
    lane.pending.splice(0, failedAt);
    // A retry from a later record is that record's first failure.
    lane.attempts = failedAt > 0 ? 1 : lane.attempts + 1;
    const rest = batch.slice(failedAt);
    if (o.maxRetryAttempts >= 0 && lane.attempts > o.maxRetryAttempts) {
      lane.pending.splice(0, rest.length);
      await this.#source.discard(this.shardId, rest, "RetryAttemptsExhausted", lane.attempts);
      reset(lane, o.batchSize);
      return;
    }
    if (o.bisectBatchOnError && failedAt === 0 && !answered(run) && batch.length > 1) {
      lane.limit = Math.ceil(batch.length / 2);
    }
    await sim.sleeper.sleep(Math.min(o.maxRetryDelayMs, o.pollIntervalMs * 2 ** (lane.attempts - 1)));
  }
}

interface Lane {
  /** Records read and not yet done, in shard order. */
  pending: ReadRecord[];
  /** Failed invocations of the lane's first pending record so far. */
  attempts: number;
  /** The next batch's size: `batchSize`, or less while a failed batch is bisected. */
  limit: number;
  busy: boolean;
}

function reset(lane: Lane, batchSize: number): void {
  lane.attempts = 0;
  lane.limit = batchSize;
}

/** The function answered (a batch response), as opposed to failing: bisect is for function errors only. */
function answered(run: LocalInvocationResult): boolean {
  return run.status === "succeeded";
}

/**
 * Where the batch failed: -1 when it succeeded, else the index of the first failed record (0: all of it). With
 * ReportBatchItemFailures, Lambda resumes from the lowest sequence number listed; an identifier that is not a
 * sequence number of the batch fails the whole batch.
 */
export function failedIndex(
  run: LocalInvocationResult,
  batch: readonly ReadRecord[],
  report: boolean,
): number {
  if (run.status !== "succeeded") return 0;
  if (!report) return -1;
  const result = run.result as { batchItemFailures?: unknown } | null | undefined;
  const failures = result && typeof result === "object" ? result.batchItemFailures : undefined;
  if (failures === undefined || failures === null) return -1;
  if (!Array.isArray(failures)) return 0;
  if (failures.length === 0) return -1;
  let lowest = batch.length;
  for (const f of failures) {
    const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    const at = typeof id === "string" ? batch.findIndex((r) => r.sequenceNumber === id) : -1;
    if (at === -1) return 0;
    lowest = Math.min(lowest, at);
  }
  return lowest;
}

/** The lane of a partition key: its hash is stable, so a key's records stay in one lane and in order. */
function laneOf(partitionKey: string, lanes: number): number {
  return lanes === 1 ? 0 : hash32(partitionKey) % lanes;
}
