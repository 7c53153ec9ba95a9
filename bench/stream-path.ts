import { type AttributeValue, ScanCommand } from "@aws-sdk/client-dynamodb";
import { type BenchClient, createBenchClient } from "./client.js";
import {
  batchOf,
  effectKey,
  effectsOf,
  oursRow,
  type Payload,
  payloadsOf,
  powertoolsRow,
  type StreamBatch,
  type StreamImplementation,
  type StreamInstance,
  type StreamSource,
  streamRows,
} from "./impls/streams.js";
import type { OpenContext } from "./impls/types.js";
import { interleaved, RepSeries, type Sampled } from "./interleave.js";
import { startLatencyProxy } from "./latency-proxy.js";
import type { Progress } from "./progress.js";
import { percentile, round, type Spread } from "./stats.js";

/**
 * One shard per row: batches one after another (one batch in flight per shard, as Lambda reads a shard), each row on
 * its own tables, interleaved batch by batch so that load drift hits all alike. Throughput is the shard's records per
 * second over the measured batches; p50 per record is the batch's p50 over its records (Lambda bills the invocation).
 */
export interface StreamRow {
  description: string;
  /** Records per batch, and distinct subjects (partition keys, items) in it. */
  batch: number;
  subjects: number;
  /** Records per second through one shard (median of the repetitions, min–max). */
  recordsPerSecond: Spread;
  /** Invocation p50 (ms) and p50 per record (its share of the invocation), median of the repetitions. */
  batchP50Ms: Spread;
  msPerRecord: number;
  /** × our `run` wrapper's records/s in the same repetition (the reference row of the source). */
  throughputVsOursRun: Spread;
  requestsPerRecord: number;
  wcuPerRecord: number;
  rcuPerRecord: number;
  /** CPU of this process per record (SDK client, wrapper or batch utility, handler). */
  cpuMsPerRecord: number;
  /** Every record's effect written exactly once, the handler run once per record, over all repetitions. */
  exactlyOnce: boolean;
  handlerRunsPerRecord: number;
  /**
   * Effects DynamoDB acknowledged before an effect of an earlier record of the same subject (shard order broken
   * within a partition key or item), over all repetitions.
   */
  outOfOrder: number;
}

/** Per condition (`loopback`, `<n>ms` one way), per source (`kinesis`, `dynamodb`), per row. */
export type StreamRuns = Record<string, Partial<Record<"kinesis" | "dynamodb", Record<string, StreamRow>>>>;

/** Requests and capacity per record of a new batch and of its redelivery, per source and row (the loopback). */
export interface StreamCost {
  newRequests: number;
  newWcu: number;
  newRcu: number;
  duplicateRequests: number;
  duplicateWcu: number;
  /** By command, per record of a new batch. */
  newByCommand: Record<string, number>;
  /** Handler runs per record over both deliveries: 1 when the redelivery ran nothing. */
  handlerRunsPerRecord: number;
}

export interface StreamResults {
  runs: StreamRuns;
  /** `<source> <row>` → cost per record: Kinesis and DynamoDB Streams beside SQS, same handler, same store. */
  cost: Record<string, StreamCost>;
}

export interface StreamOptions {
  /** Records per batch and subjects per batch. */
  batch: number;
  subjects: number;
  /** Measured batches per row per repetition (after one unmeasured), and repetitions. */
  batches: number;
  reps: number;
  /** One-way delays (ms) behind the latency proxy; the loopback is always measured first. */
  oneWayMs: number[];
  jitterMs: number;
  maxSockets: number;
}

type Open = (
  bc: BenchClient,
  impl: { name: string; open(ctx: OpenContext): Promise<unknown> },
) => Promise<unknown>;

export async function measureStreams(
  bc: BenchClient,
  endpoint: string,
  open: Open,
  o: StreamOptions,
  progress: Progress,
): Promise<StreamResults> {
  const cost = await measureCost(bc, open, o, progress);
  const runs: StreamRuns = { loopback: await sweep(bc, open, o, progress, "loopback") };
  const target = new URL(endpoint);
  for (const oneWayMs of o.oneWayMs) {
    const proxy = await startLatencyProxy({
      target: { host: target.hostname, port: Number(target.port) },
      oneWayMs,
      jitterMs: o.jitterMs,
    });
    const viaProxy = createBenchClient(proxy.endpoint, o.maxSockets, (t) => t.endsWith("-out"));
    try {
      runs[`${oneWayMs}ms`] = await sweep(viaProxy, open, o, progress, `${oneWayMs}ms`);
    } finally {
      viaProxy.destroy();
      await proxy.close();
    }
  }
  return { runs, cost };
}

/** Every row of both stream sources at one condition. */
async function sweep(
  bc: BenchClient,
  open: Open,
  o: StreamOptions,
  progress: Progress,
  tag: string,
): Promise<StreamRuns[string]> {
  const out: StreamRuns[string] = {};
  for (const source of ["kinesis", "dynamodb"] as const) {
    const rows = streamRows(source);
    progress.phase(`streams: ${source} (${tag})`, o.reps * rows.length * (o.batches + 1));
    const series = new RepSeries();
    const totals = rows.map(() => ({
      records: 0,
      requests: 0,
      wcu: 0,
      rcu: 0,
      cpuMs: 0,
      runs: 0,
      ok: true,
      outOfOrder: 0,
      expectedRuns: 0,
    }));
    for (let rep = 0; rep < o.reps; rep++) {
      // Every row gets the same batches: one shard, its sequence numbers growing from batch to batch.
      const batches = Array.from({ length: o.batches + 1 }, (_, i) =>
        batchOf(source, payloadsOf(`st-${tag}-${source}-${rep}`, i, o.batch, o.subjects)),
      );
      const instances = (await Promise.all(rows.map((r) => open(bc, r)))) as StreamInstance[];
      const sampled = await interleaved(
        instances.map((inst) => (i: number) => inst.invoke(batches[i] as StreamBatch)),
        { warmup: 1, count: o.batches, bc, onTick: () => progress.tick() },
      );
      const oursRun = sampled[0] as Sampled;
      const oursRate = rate(oursRun, o.batch);
      for (const [k, row] of rows.entries()) {
        const s = sampled[k] as Sampled;
        const t = totals[k] as (typeof totals)[number];
        const inst = instances[k] as StreamInstance;
        series.push(`${row.name}:rate`, rate(s, o.batch));
        series.push(`${row.name}:p50`, percentile(s.ms, 50));
        series.push(`${row.name}:vs`, rate(s, o.batch) / oursRate);
        t.records += s.calls * o.batch;
        t.requests += s.requests;
        t.wcu += s.wcu;
        t.rcu += s.rcu;
        t.cpuMs += s.cpuMs;
        t.runs += inst.handlerRuns;
        t.ok &&= await exactlyOnce(bc, inst, batches, row.newestPerSubject);
        t.expectedRuns += batches.reduce((n, b) => n + effectsOf(b.payloads, row.newestPerSubject).length, 0);
        t.outOfOrder += outOfOrder(bc, inst, batches);
        bc.writes.clear(inst.outputTable);
      }
      await Promise.all(instances.map((inst) => inst.close()));
    }
    out[source] = Object.fromEntries(
      rows.map((row, k) => {
        const t = totals[k] as (typeof totals)[number];
        const r: StreamRow = {
          description: row.description,
          batch: o.batch,
          subjects: o.subjects,
          recordsPerSecond: series.spread(`${row.name}:rate`, 0),
          batchP50Ms: series.spread(`${row.name}:p50`),
          msPerRecord: round(series.median(`${row.name}:p50`) / o.batch, 3),
          throughputVsOursRun: series.spread(`${row.name}:vs`),
          requestsPerRecord: round(t.requests / t.records),
          wcuPerRecord: round(t.wcu / t.records),
          rcuPerRecord: round(t.rcu / t.records),
          cpuMsPerRecord: round(t.cpuMs / t.records, 3),
          exactlyOnce: t.ok && t.runs === t.expectedRuns,
          handlerRunsPerRecord: round(t.runs / (o.reps * (o.batches + 1) * o.batch), 3),
          outOfOrder: t.outOfOrder,
        };
        return [row.name, r];
      }),
    );
  }
  return out;
}

/** Records per second of one shard: its measured batches' records over their summed wall time. */
function rate(s: Sampled, batch: number): number {
  const ms = s.ms.reduce((a, b) => a + b, 0);
  return ms > 0 ? (s.calls * batch) / (ms / 1000) : Number.NaN;
}

/**
 * Requests and capacity per record, sequentially on the loopback: a new batch, then the same batch again (Lambda's
 * redelivery after a timeout). Our wrapper on Kinesis, DynamoDB Streams and SQS (the same payloads as application
 * messages, subject and a position per subject as on the streams), in both modes, and Powertools on each.
 */
async function measureCost(
  bc: BenchClient,
  open: Open,
  o: StreamOptions,
  progress: Progress,
): Promise<Record<string, StreamCost>> {
  const sources: StreamSource[] = ["sqs", "kinesis", "dynamodb"];
  const rows = sources.flatMap((source): StreamImplementation[] => [
    oursRow(source, "run"),
    oursRow(source, "apply"),
    powertoolsRow(source, true),
  ]);
  progress.phase("streams: requests per record", rows.length * 3);
  const out: Record<string, StreamCost> = {};
  for (const row of rows) {
    const inst = (await open(bc, row)) as StreamInstance;
    // Not counted: a first batch on the fresh tables.
    const shard = `cost-${row.source}-${row.name}`;
    const first = batchOf(row.source, payloadsOf(shard, 0, o.batch, o.subjects));
    await inst.invoke(first);
    progress.tick();
    const batch = batchOf(row.source, payloadsOf(shard, 1, o.batch, o.subjects));
    const measured = await counted(bc, () => inst.invoke(batch));
    progress.tick();
    const again = await counted(bc, () => inst.invoke(batch));
    progress.tick();
    const n = o.batch;
    out[`${row.source} ${row.name}`] = {
      newRequests: round(measured.requests / n),
      newWcu: round(measured.wcu / n),
      newRcu: round(measured.rcu / n),
      duplicateRequests: round(again.requests / n),
      duplicateWcu: round(again.wcu / n),
      newByCommand: Object.fromEntries(Object.entries(measured.byCommand).map(([c, k]) => [c, round(k / n)])),
      handlerRunsPerRecord: round(inst.handlerRuns / (2 * n), 3),
    };
    bc.writes.clear(inst.outputTable);
    await inst.close();
  }
  return out;
}

async function counted(bc: BenchClient, call: () => Promise<void>) {
  bc.requests.reset();
  bc.capacity.reset();
  await call();
  return {
    requests: bc.requests.total(),
    wcu: bc.capacity.wcu,
    rcu: bc.capacity.rcu,
    byCommand: { ...bc.requests.counts },
  };
}

/**
 * Every record of the batches that runs (all, or with `newestPerSubject` each subject's newest per batch) has its row,
 * no other row is there, and DynamoDB acknowledged exactly one write of each.
 */
async function exactlyOnce(
  bc: BenchClient,
  inst: StreamInstance,
  batches: StreamBatch[],
  newestPerSubject: boolean | undefined,
): Promise<boolean> {
  const expected = new Set(
    batches.flatMap((b) => effectsOf(b.payloads, newestPerSubject).map((p: Payload) => effectKey(p))),
  );
  const rows = new Set<string>();
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await bc.client.send(
      new ScanCommand({
        TableName: inst.outputTable,
        ProjectionExpression: "pk",
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) rows.add(item.pk?.S ?? "");
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  const writes = new Map<string, number>();
  for (const w of bc.writes.for(inst.outputTable)) writes.set(w.pk, (writes.get(w.pk) ?? 0) + 1);
  return rows.size === expected.size && [...expected].every((pk) => rows.has(pk) && writes.get(pk) === 1);
}

/** Acknowledged effects that came after an effect of a later record of their subject (in the batches' order). */
function outOfOrder(bc: BenchClient, inst: StreamInstance, batches: StreamBatch[]): number {
  const rank = new Map<string, { subject: string; at: number }>();
  let at = 0;
  for (const b of batches)
    for (const p of b.payloads) rank.set(effectKey(p), { subject: p.subject, at: at++ });
  const latest = new Map<string, number>();
  let late = 0;
  for (const w of bc.writes.for(inst.outputTable)) {
    const r = rank.get(w.pk);
    if (!r) continue;
    if ((latest.get(r.subject) ?? -1) > r.at) late++;
    else latest.set(r.subject, r.at);
  }
  return late;
}
