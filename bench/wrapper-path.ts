import { type Correctness, checkOutput } from "./check.js";
import type { BenchClient } from "./client.js";
import { type BenchEvent, makeEvent } from "./events.js";
import {
  type BatchImplementation,
  type BatchInstance,
  type Invocation,
  invocationOf,
  TRIGGERS,
  type Trigger,
  wrapperRows,
} from "./impls/wrappers.js";
import { interleaved, RepSeries, type Sampled } from "./interleave.js";
import type { Progress } from "./progress.js";
import { percentile, round, type Spread } from "./stats.js";

/** One row of the wrapper path: an invocation's cost and what it costs per event. */
export interface WrapperRow {
  description: string;
  /** Events per invocation. */
  batch: number;
  /** Wall time of one invocation, median of the repetitions' p50 / p99 (min–max). */
  invocationP50Ms: Spread;
  invocationP99Ms: Spread;
  /** The invocation's p50 per event (Lambda bills the invocation: a batch shares it). */
  msPerEvent: number;
  /** msPerEvent over the unguarded handler's, same trigger, same run. */
  addedMsPerEvent: number;
  requestsPerEvent: number;
  wcuPerEvent: number;
  rcuPerEvent: number;
  /** CPU of this process per event (SDK client, wrapper, guard, handler). */
  cpuMsPerEvent: number;
  /** Wrapper rows: p50 over the bare guard's in the same mode, per repetition (median, min–max). */
  overBareP50?: Spread;
  /** Wrapper rows: CPU per event over the bare guard's in the same mode. */
  overBareCpu?: number;
  correct: boolean;
}

/** Rows by trigger (`s3`, `sqs`, `eventbridge`), then by name (`unguarded`, `guard.apply`, `wrapper apply`, …). */
export type WrapperResults = Partial<Record<Trigger, Record<string, WrapperRow>>>;

export interface WrapperPathOptions {
  /** Measured invocations per row per repetition (plus a few unmeasured first). */
  invocations: number;
  reps: number;
  /** Distinguishes the keys of this measurement from another's on the same DynamoDB Local. */
  tag: string;
}

type OpenBatch = (impl: BatchImplementation) => Promise<BatchInstance>;

/** Every trigger's rows, interleaved invocation by invocation within the trigger, over `reps` fresh sets of tables. */
export async function measureWrapperPath(
  bc: BenchClient,
  open: OpenBatch,
  o: WrapperPathOptions,
  progress: Progress,
): Promise<WrapperResults> {
  const out: WrapperResults = {};
  // Unmeasured first invocations per row and repetition (fresh tables, first requests of each kind).
  const warmup = Math.min(5, Math.ceil(o.invocations / 10));
  for (const trigger of Object.keys(TRIGGERS) as Trigger[]) {
    const rows = wrapperRows(trigger);
    progress.phase(`wrapper path: ${trigger} (${o.tag})`, o.reps * rows.length * (o.invocations + warmup));
    const series = new RepSeries();
    const totals = rows.map(() => ({ events: 0, requests: 0, wcu: 0, rcu: 0, cpuMs: 0, ok: true }));
    for (let rep = 0; rep < o.reps; rep++) {
      const invocations = Array.from({ length: warmup + o.invocations }, (_, i) =>
        invocationOf(trigger, batchEvents(`wr-${o.tag}-${trigger}-${rep}-${i}`, TRIGGERS[trigger].batch)),
      );
      const instances = await Promise.all(rows.map((r) => open(r)));
      const sampled = await interleaved(
        instances.map((inst) => (i: number) => inst.invoke(invocations[i] as Invocation)),
        { warmup: warmup, count: o.invocations, bc, onTick: () => progress.tick() },
      );
      for (const [k, row] of rows.entries()) {
        const s = sampled[k] as Sampled;
        const t = totals[k] as (typeof totals)[number];
        series.push(`${row.name}:p50`, percentile(s.ms, 50));
        series.push(`${row.name}:p99`, percentile(s.ms, 99));
        t.events += s.calls * TRIGGERS[trigger].batch;
        t.requests += s.requests;
        t.wcu += s.wcu;
        t.rcu += s.rcu;
        t.cpuMs += s.cpuMs;
        const inst = instances[k] as BatchInstance;
        t.ok &&= (await correctness(bc, inst, invocations)).ok;
        bc.writes.clear(inst.outputTable);
      }
      await Promise.all(instances.map((inst) => inst.close()));
      for (const mode of ["apply", "run"]) {
        const w = percentile(sampled[rows.findIndex((r) => r.name === `wrapper ${mode}`)]?.ms ?? [], 50);
        const b = percentile(sampled[rows.findIndex((r) => r.name === `guard.${mode}`)]?.ms ?? [], 50);
        series.push(`wrapper ${mode}:overBare`, w / b);
      }
    }
    out[trigger] = rowsOf(rows, series, totals, TRIGGERS[trigger].batch);
  }
  return out;
}

function rowsOf(
  rows: BatchImplementation[],
  series: RepSeries,
  totals: { events: number; requests: number; wcu: number; rcu: number; cpuMs: number; ok: boolean }[],
  batch: number,
): Record<string, WrapperRow> {
  const floor = series.median("unguarded:p50") / batch;
  const cpuOf = (name: string) => {
    const t = totals[rows.findIndex((r) => r.name === name)];
    return t && t.events > 0 ? t.cpuMs / t.events : Number.NaN;
  };
  const out: Record<string, WrapperRow> = {};
  for (const [k, r] of rows.entries()) {
    const t = totals[k] as (typeof totals)[number];
    const msPerEvent = series.median(`${r.name}:p50`) / batch;
    const mode = r.name.startsWith("wrapper ") ? r.name.slice("wrapper ".length) : undefined;
    out[r.name] = {
      description: r.description,
      batch,
      invocationP50Ms: series.spread(`${r.name}:p50`),
      invocationP99Ms: series.spread(`${r.name}:p99`),
      msPerEvent: round(msPerEvent, 3),
      addedMsPerEvent: round(msPerEvent - floor, 3),
      requestsPerEvent: round(t.requests / t.events),
      wcuPerEvent: round(t.wcu / t.events),
      rcuPerEvent: round(t.rcu / t.events),
      cpuMsPerEvent: round(t.cpuMs / t.events, 3),
      ...(mode
        ? {
            overBareP50: series.spread(`${r.name}:overBare`),
            overBareCpu: round(cpuOf(r.name) / cpuOf(`guard.${mode}`), 3),
          }
        : {}),
      correct: t.ok,
    };
  }
  return out;
}

function batchEvents(tag: string, size: number): BenchEvent[] {
  return Array.from({ length: size }, (_, b) => makeEvent(`${tag}-${b}`, 1));
}

/** Every event of the repetition has its row, written once. */
function correctness(bc: BenchClient, inst: BatchInstance, invocations: Invocation[]): Promise<Correctness> {
  const expected = new Map(invocations.flatMap((inv) => inv.events.map((e) => [e.subject, e.position])));
  return checkOutput(bc.client, bc.writes, inst.outputTable, expected);
}
