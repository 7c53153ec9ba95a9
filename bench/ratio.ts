/**
 * The inline targets only, quickly: throughput of `inline` and `inline-run` as a share of a raw conditional
 * PutItem at one worker count, and the sequential p50 of `inline` over the raw put's, all in one process on one
 * DynamoDB Local, interleaved (raw, inline, raw, inline-run, raw …) so that load drift hits all alike.
 *
 *   tsx bench/ratio.ts [--workers 16] [--events 5000] [--rounds 3] [--latency 300] [--impls inline,inline-run]
 *
 * A development tool for optimising the hot path; `npm run bench` is the reference measurement.
 */
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
  .parse()
  .opts<{ workers: string; events: string; rounds: string; latency: string; impls: string }>();
const workers = Number(opts.workers);
const events = Number(opts.events);
const impls = opts.impls.split(",").map((name) => {
  const impl = (IMPLEMENTATIONS as Record<string, Implementation>)[name];
  if (!impl) throw new Error(`unknown implementation ${name}`);
  return impl;
});
const raw = IMPLEMENTATIONS.rawWrite;
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

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
  for (const impl of [raw, ...impls]) await throughput(impl, 1000, `warm-${impl.name}`);

  const shares = new Map<string, number[]>();
  const cpu = new Map<string, { client: number[]; server: number[] }>();
  const note = (name: string, r: { client: number; server: number }) => {
    const c = cpu.get(name) ?? { client: [], server: [] };
    c.client.push(r.client);
    c.server.push(r.server);
    cpu.set(name, c);
  };
  for (let round_ = 0; round_ < Number(opts.rounds); round_++) {
    let before = await throughput(raw, events, `r${round_}-raw0`);
    note("rawWrite", before);
    for (const impl of impls) {
      const r = await throughput(impl, events, `r${round_}-${impl.name}`);
      const after = await throughput(raw, events, `r${round_}-raw-${impl.name}`);
      note(impl.name, r);
      note("rawWrite", after);
      const share = r.eps / ((before.eps + after.eps) / 2);
      shares.set(impl.name, [...(shares.get(impl.name) ?? []), share]);
      console.log(
        `round ${round_}: ${impl.name} ${Math.round(r.eps)}/s vs raw ${Math.round(before.eps)}–${Math.round(after.eps)}/s = ${round(100 * share, 1)}%`,
      );
      before = after;
    }
  }
  console.log(`\nthroughput at ${workers} workers, ${events} keys (median of rounds):`);
  for (const [name, s] of shares)
    console.log(
      `  ${name}: ${round(100 * percentile(s, 50), 1)}% of raw`,
      s.map((x) => round(100 * x, 1)),
    );
  console.log("CPU ms/event (median): client, server, total × raw's");
  const total = (c: { client: number[]; server: number[] }) =>
    percentile(c.client, 50) + percentile(c.server, 50);
  const rawCpu = cpu.get("rawWrite");
  for (const [name, c] of cpu) {
    const ratio = rawCpu ? round(total(c) / total(rawCpu), 2) : Number.NaN;
    console.log(
      `  ${name}: ${round(percentile(c.client, 50), 3)}, ${round(percentile(c.server, 50), 3)}, ${ratio}×`,
    );
  }
  const latencyEvents = Number(opts.latency);
  if (latencyEvents > 0) {
    const all = [raw, ...impls];
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
