import { type BenchClient, createBenchClient } from "./client.js";
import { makeEvent } from "./events.js";
import type { Implementation, Instance, OpenContext } from "./impls/types.js";
import type { BatchImplementation } from "./impls/wrappers.js";
import { interleaved, RepSeries, type Sampled } from "./interleave.js";
import { startLatencyProxy } from "./latency-proxy.js";
import type { Progress } from "./progress.js";
import { percentile, round, type Spread } from "./stats.js";
import { measureWrapperPath, type WrapperResults } from "./wrapper-path.js";

/** One implementation at one injected latency: its new event's latency, and what it adds to a raw write's. */
export interface InjectedRow {
  p50Ms: Spread;
  p99Ms: Spread;
  /** Over the raw conditional PutItem's percentile in the same repetition, ms. */
  addedP50Ms: Spread;
  addedP99Ms: Spread;
  /** × the raw conditional PutItem's percentile in the same repetition. */
  ratioP50: Spread;
  ratioP99: Spread;
  requestsPerEvent: number;
  cpuMsPerEvent: number;
}

export interface InjectedRun {
  /** Added to every chunk in each direction by bench/latency-proxy.ts: a round trip pays twice this. */
  oneWayMs: number;
  jitterMs: number;
  /** How late the proxy's timers fired, mean per chunk (a round trip pays about twice this on top). */
  proxyLateMs: number;
  rows: Record<string, InjectedRow>;
  /** The wrapper path through the same proxy. */
  wrappers: WrapperResults;
}

export interface InjectedOptions {
  oneWayMs: number[];
  jitterMs: number;
  /** Measured events per implementation per repetition. */
  events: number;
  reps: number;
  warmup: number;
  wrapperInvocations: number;
  wrapperReps: number;
  maxSockets: number;
}

/** Opens an implementation (per-event or per-invocation) with its tables, through the given client. */
type OpenWith = (
  client: BenchClient,
  impl: { name: string; open(ctx: OpenContext): Promise<unknown> },
) => Promise<unknown>;

/**
 * Each implementation's sequential new-event latency with DynamoDB Local behind the latency proxy, at each one-way
 * delay: every request pays a round trip as it would from Lambda to DynamoDB, so the figures say what each protocol's
 * round trips cost where they cost the most. Interleaved event by event; the baseline is the raw conditional PutItem
 * (`rawWrite`, which must be among `impls`) of the same repetition.
 */
export async function measureInjectedLatency(
  endpoint: string,
  impls: Implementation[],
  open: OpenWith,
  o: InjectedOptions,
  progress: Progress,
): Promise<InjectedRun[]> {
  const target = new URL(endpoint);
  const runs: InjectedRun[] = [];
  for (const oneWayMs of o.oneWayMs) {
    const proxy = await startLatencyProxy({
      target: { host: target.hostname, port: Number(target.port) },
      oneWayMs,
      jitterMs: o.jitterMs,
    });
    const bc = createBenchClient(proxy.endpoint, o.maxSockets, (t) => t.endsWith("-out"));
    try {
      const rows = await sweepOne(bc, impls, open, o, progress, oneWayMs);
      const wrappers = await measureWrapperPath(
        bc,
        (impl: BatchImplementation) => open(bc, impl) as ReturnType<BatchImplementation["open"]>,
        { invocations: o.wrapperInvocations, reps: o.wrapperReps, tag: `${oneWayMs}ms` },
        progress,
      );
      runs.push({
        oneWayMs,
        jitterMs: o.jitterMs,
        proxyLateMs: round(proxy.stats().lateMs, 3),
        rows,
        wrappers,
      });
    } finally {
      bc.destroy();
      await proxy.close();
    }
  }
  return runs;
}

async function sweepOne(
  bc: BenchClient,
  impls: Implementation[],
  open: OpenWith,
  o: InjectedOptions,
  progress: Progress,
  oneWayMs: number,
): Promise<Record<string, InjectedRow>> {
  const base = impls.findIndex((i) => i.name === "rawWrite");
  if (base < 0) throw new Error("injected latency: rawWrite is the baseline and must be measured");
  progress.phase(`latency at ${oneWayMs} ms one way`, o.reps * impls.length * (o.events + o.warmup));
  const series = new RepSeries();
  const totals = impls.map(() => ({ events: 0, requests: 0, cpuMs: 0 }));
  for (let rep = 0; rep < o.reps; rep++) {
    const instances = (await Promise.all(impls.map((impl) => open(bc, impl)))) as Instance[];
    const sampled = await interleaved(
      instances.map(
        (inst) => (i: number) => inst.deliver(makeEvent(`inj-${oneWayMs}-${rep}-${i}`, 1), { workMs: 0 }),
      ),
      { warmup: o.warmup, count: o.events, bc, onTick: () => progress.tick() },
    );
    const raw = sampled[base] as Sampled;
    const raw50 = percentile(raw.ms, 50);
    const raw99 = percentile(raw.ms, 99);
    for (const [k, impl] of impls.entries()) {
      const s = sampled[k] as Sampled;
      const p50 = percentile(s.ms, 50);
      const p99 = percentile(s.ms, 99);
      series.push(`${impl.name}:p50`, p50);
      series.push(`${impl.name}:p99`, p99);
      series.push(`${impl.name}:a50`, p50 - raw50);
      series.push(`${impl.name}:a99`, p99 - raw99);
      series.push(`${impl.name}:r50`, p50 / raw50);
      series.push(`${impl.name}:r99`, p99 / raw99);
      const t = totals[k] as (typeof totals)[number];
      t.events += s.calls;
      t.requests += s.requests;
      t.cpuMs += s.cpuMs;
    }
    await Promise.all(instances.map((inst) => inst.close()));
    bc.writes.clear();
  }
  return Object.fromEntries(
    impls.map((impl, k) => {
      const t = totals[k] as (typeof totals)[number];
      const row: InjectedRow = {
        p50Ms: series.spread(`${impl.name}:p50`),
        p99Ms: series.spread(`${impl.name}:p99`),
        addedP50Ms: series.spread(`${impl.name}:a50`),
        addedP99Ms: series.spread(`${impl.name}:a99`),
        ratioP50: series.spread(`${impl.name}:r50`),
        ratioP99: series.spread(`${impl.name}:r99`),
        requestsPerEvent: round(t.requests / t.events),
        cpuMsPerEvent: round(t.cpuMs / t.events, 3),
      };
      return [impl.name, row];
    }),
  );
}
