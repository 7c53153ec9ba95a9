/**
 * The inline targets only, quickly: throughput of `inline` and `inline-run` as a share of a raw conditional
 * PutItem at one worker count, and the sequential p50 of `inline` over the raw put's, all in one process on one
 * DynamoDB Local, interleaved (raw, inline, raw, inline-run, raw …) so that load drift hits all alike.
 *
 *   tsx bench/ratio.ts [--workers 16] [--events 5000] [--rounds 3] [--latency 300] [--impls inline,inline-run]
 *
 * `--pairs` compares each implementation with its own baseline instead of the raw put, each round sandwiched
 * (baseline, implementation, baseline), e.g. the wrapper against the bare guard in the same mode:
 *
 *   tsx bench/ratio.ts --pairs inline-wrapper-apply:inline,inline-wrapper-run:inline-run --rounds 7 --latency 0
 *
 * A development tool for optimising the hot path; `npm run bench` is the reference measurement.
 */
import { loadavg } from "node:os";
import { Command } from "commander";
import { startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { createBenchClient } from "./client.js";
import { cpuMeter } from "./cpu.js";
import { makeEvent } from "./events.js";
import { IMPLEMENTATIONS } from "./harness.js";
import type { Implementation } from "./impls/types.js";
import { percentile, round } from "./stats.js";
import { timedRun } from "./timed-run.js";

const opts = new Command()
  .option("--workers <n>", "concurrent workers", "16")
  .option("--events <n>", "distinct keys per throughput run", "5000")
  .option("--rounds <n>", "interleaved rounds", "3")
  .option("--latency <n>", "sequential events per implementation for p50 (0: none)", "300")
  .option("--impls <list>", "implementations compared with rawWrite", "inline,inline-run")
  .option("--pairs <list>", "impl:baseline,… each compared with its own baseline (instead of --impls)")
  .parse()
  .opts<{
    workers: string;
    events: string;
    rounds: string;
    latency: string;
    impls: string;
    pairs?: string;
  }>();
const workers = Number(opts.workers);
const events = Number(opts.events);
const implementation = (name: string): Implementation => {
  const impl = (IMPLEMENTATIONS as Record<string, Implementation>)[name];
  if (!impl) throw new Error(`unknown implementation ${name}`);
  return impl;
};
const raw = IMPLEMENTATIONS.rawWrite;
// Each compared implementation with the baseline whose runs sandwich it.
const pairs = opts.pairs
  ? opts.pairs.split(",").map((pair) => {
      const [name, base, extra] = pair.split(":");
      if (!name || !base || extra !== undefined) throw new Error(`--pairs: ${pair} is not impl:baseline`);
      return { impl: implementation(name), base: implementation(base) };
    })
  : opts.impls.split(",").map((name) => ({ impl: implementation(name), base: raw }));
const impls = pairs.map((p) => p.impl);
const bases = [...new Set(pairs.map((p) => p.base))];
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
/** The 1-minute load average: other work on the machine during a round. */
const loadAverage = () => round(loadavg()[0] ?? Number.NaN, 2);

const local = await startDynamoDBLocal();
const bc = createBenchClient(local.endpoint, workers * 2, (t) => t.endsWith("-out"));
let n = 0;
try {
  const meter = cpuMeter(local.endpoint);
  const throughput = async (impl: Implementation, count: number, tag: string) => {
    const run = await timedRun(impl, {
      client: bc.client,
      cpu: meter,
      workers,
      count,
      tag,
      prefix: `ratio-${++n}`,
    });
    bc.writes.clear();
    return {
      eps: count / (run.elapsedMs / 1000),
      client: run.clientMs / count,
      server: (run.serverMs ?? Number.NaN) / count,
    };
  };
  for (const impl of [...bases, ...impls]) await throughput(impl, 1000, `warm-${impl.name}`);

  const shares = new Map<string, number[]>();
  const cpu = new Map<string, { client: number[]; server: number[] }>();
  const note = (name: string, r: { client: number; server: number }) => {
    const c = cpu.get(name) ?? { client: [], server: [] };
    c.client.push(r.client);
    c.server.push(r.server);
    cpu.set(name, c);
  };
  for (let round_ = 0; round_ < Number(opts.rounds); round_++) {
    // A baseline's run after one implementation is the run before the next one of the same baseline.
    const previous = new Map<Implementation, Awaited<ReturnType<typeof throughput>>>();
    for (const { impl, base } of pairs) {
      const before = previous.get(base) ?? (await throughput(base, events, `r${round_}-${base.name}-0`));
      if (!previous.has(base)) note(base.name, before);
      const r = await throughput(impl, events, `r${round_}-${impl.name}`);
      const after = await throughput(base, events, `r${round_}-${base.name}-${impl.name}`);
      note(impl.name, r);
      note(base.name, after);
      previous.set(base, after);
      const share = r.eps / ((before.eps + after.eps) / 2);
      shares.set(impl.name, [...(shares.get(impl.name) ?? []), share]);
      console.log(
        `round ${round_}: ${impl.name} ${Math.round(r.eps)}/s vs ${base.name} ${Math.round(before.eps)}–${Math.round(after.eps)}/s = ${round(100 * share, 1)}% (load ${loadAverage()})`,
      );
    }
  }
  console.log(`\nthroughput at ${workers} workers, ${events} keys (median of rounds):`);
  for (const { impl, base } of pairs) {
    const s = shares.get(impl.name) ?? [];
    console.log(
      `  ${impl.name}: ${round(100 * percentile(s, 50), 1)}% of ${base.name}`,
      s.map((x) => round(100 * x, 1)),
    );
  }
  console.log("CPU ms/event (median): client, server, total × its baseline's (client × baseline's)");
  const total = (c: { client: number[]; server: number[] }) =>
    percentile(c.client, 50) + percentile(c.server, 50);
  const baseOf = new Map(pairs.map((p) => [p.impl.name, p.base.name]));
  for (const [name, c] of cpu) {
    const b = cpu.get(baseOf.get(name) ?? "");
    // On a quiet machine both processes' CPU is the limit: the share of the baseline's rate it predicts.
    const ratio = b
      ? `${round(total(c) / total(b), 2)}× (client ${round(percentile(c.client, 50) / percentile(b.client, 50), 2)}×; by CPU ${round((100 * total(b)) / total(c), 1)}% of its rate)`
      : "baseline";
    console.log(
      `  ${name}: ${round(percentile(c.client, 50), 3)}, ${round(percentile(c.server, 50), 3)}, ${ratio}`,
    );
  }
  const latencyEvents = Number(opts.latency);
  if (latencyEvents > 0) {
    const all = [...new Set([raw, ...bases, ...impls])];
    const instances = await Promise.all(
      all.map((impl) => impl.open({ client: bc.client, prefix: `ratio-lat-${++n}` })),
    );
    const samples = all.map(() => [] as number[]);
    const warmup = 30;
    for (let i = 0; i < warmup + latencyEvents; i++) {
      const event = makeEvent(`lat-${i}`, 1);
      for (let j = 0; j < instances.length; j++) {
        const k = (i + j) % instances.length;
        const t0 = performance.now();
        await instances[k]?.deliver(event, { workMs: 0 });
        if (i >= warmup) samples[k]?.push(performance.now() - t0);
      }
    }
    for (const instance of instances) await instance.close();
    const base = percentile(samples[0] ?? [], 50);
    console.log(`\nsequential p50 over ${latencyEvents} events: rawWrite ${round(base, 3)} ms`);
    all.forEach((impl, k) => {
      const p50 = percentile(samples[k] ?? [], 50);
      console.log(`  ${impl.name}: ${round(p50, 3)} ms = ${round(p50 / base, 2)}×`);
    });
  }
} finally {
  bc.destroy();
  await local.stop();
}
