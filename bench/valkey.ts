/**
 * The Valkey / Redis engine beside a raw write and Powertools' cache layer, in one process on one server
 * (EONCE_VALKEY_URL, default the local Redis), interleaved round by round so that load drift hits all alike. Each
 * implementation handles the same S3 events; the effect is a SET of the event's thumbnail key:
 *
 * - `raw SET NX`: `SET <key> <value> NX EX 3600`, the least a dedupe can cost: one command, no effect, no order;
 * - `ours apply`: `ValkeyStore` + `guard.apply`, the effect a fenced `ValkeyFencedSink.set` folded into the step's
 *   script (claim, effect and commit: one EVALSHA);
 * - `ours run`: the same with `guard.run`: claim, then the commit with the effect folded in (two EVALSHAs);
 * - `powertools`: `@aws-lambda-powertools/idempotency` 2.35.0, `makeIdempotent` with the real `CachePersistenceLayer`
 *   (`@aws-lambda-powertools/idempotency/cache`) on an ioredis adapter (test/engines/valkey/powertools.ts), the
 *   handler doing the same SET itself (no fence: Powertools has none).
 *
 * Every worker is a Lambda instance of its own: its own client (connection), store, guard or persistence layer.
 * Round trips are commands counted at the clients (`countValkeyCommands`: every command passes `sendCommand`).
 * Then the #5714 interleaving (a stale snapshot beside a completed record) runs against Powertools and ours.
 *
 *   npm run bench:valkey -- [--workers 16] [--events 3000] [--rounds 3] [--latency 500]
 */
import { randomUUID } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { Command } from "commander";
import { Redis } from "ioredis";
import { createGuard } from "../src/core/guard.js";
import { stateKey } from "../src/core/state-key.js";
import { TEST_VALKEY_URL } from "../src/engines/valkey/client.js";
import { valkeyHashTag } from "../src/engines/valkey/keys.js";
import { countValkeyCommands } from "../src/engines/valkey/request-counter.js";
import { ValkeyFencedSink } from "../src/engines/valkey/sink.js";
import { ValkeyStore } from "../src/engines/valkey/store.js";
import type { RequestCounter } from "../src/observe/request-counter.js";
import { deleteKeys } from "../test/engines/valkey/harness.js";
import {
  oursStaleSnapshot,
  powertoolsCacheClient,
  powertoolsStaleSnapshot,
  type StaleSnapshotRun,
} from "../test/engines/valkey/powertools.js";
import { lambdaContext } from "../test/kit/context.js";
import { type BenchEvent, makeEvent } from "./events.js";
import { onWorkers } from "./on-workers.js";
import { percentile, round } from "./stats.js";

const opts = new Command()
  .option("--workers <n>", "concurrent workers (each with its own client)", "16")
  .option("--events <n>", "distinct keys per throughput run", "3000")
  .option("--rounds <n>", "interleaved rounds", "3")
  .option("--latency <n>", "sequential events per implementation for p50 (0: none)", "500")
  .parse()
  .opts<{ workers: string; events: string; rounds: string; latency: string }>();
const workers = Number(opts.workers);
const url = TEST_VALKEY_URL;
/** Every key of this run starts with it; deleted at the end (SCAN and DEL, never FLUSHALL: the server is shared). */
const prefix = `eonce-bench:${randomUUID()}:`;

type Deliver = (event: BenchEvent) => Promise<unknown>;
interface Impl {
  name: string;
  /** A worker's instance on `client`, its keys under `tag`. */
  open(client: Redis, tag: string): Deliver;
  /** Where the effect of `e` lands (the raw write's own key). */
  effectKey(tag: string, e: BenchEvent): string;
}

const thumb = (e: BenchEvent) => `thumbs/${e.key}@${e.version}`;

const raw: Impl = {
  name: "raw SET NX",
  open: (client, tag) => (e) => client.set(raw.effectKey(tag, e), thumb(e), "EX", 3600, "NX"),
  effectKey: (tag, e) => `${tag}raw:${e.subject}`,
};

function ours(mode: "apply" | "run"): Impl {
  return {
    name: `ours ${mode}`,
    open(client, tag) {
      const store = new ValkeyStore({ client, keyPrefix: tag });
      const sink = new ValkeyFencedSink({ store });
      const guard = createGuard({ store });
      const write = (ctx: { stateKey: string; position: string | undefined; fence: number }, e: BenchEvent) =>
        sink.set(ctx, `${tag}thumb:${valkeyHashTag(ctx.stateKey)}`, thumb(e));
      const event = (e: BenchEvent) => ({ subject: e.subject, identity: e.identity, position: e.position });
      return mode === "apply"
        ? (e) => guard.apply(event(e), (ctx) => ctx.atCommit(write(ctx, e)))
        : (e) => guard.run(event(e), async (ctx) => ctx.atCommit(write(ctx, e)));
    },
    effectKey: (tag, e) => `${tag}thumb:${valkeyHashTag(stateKey(e.subject, "", true))}`,
  };
}

const powertools: Impl = {
  name: "powertools",
  open(client, tag) {
    const config = new IdempotencyConfig({
      eventKeyJmesPath: "[s3.bucket.name, s3.object.key, s3.object.sequencer, eventName]",
      throwOnNoIdempotencyKey: true,
    });
    const persistenceStore = new CachePersistenceLayer({ client: powertoolsCacheClient(client) });
    const processRecord = makeIdempotent(
      async (_record: BenchEvent["record"], e: BenchEvent) => {
        await client.set(powertools.effectKey(tag, e), thumb(e));
        return { thumb: thumb(e) };
      },
      { persistenceStore, config, keyPrefix: `${tag}pt`, dataIndexArgument: 0 },
    );
    return (e) => {
      // Each delivery is an invocation with the full timeout ahead of it.
      config.registerLambdaContext(lambdaContext({ functionName: "bench-valkey", timeoutMs: 30_000 }));
      return processRecord(e.record, e);
    };
  },
  effectKey: (tag, e) => `${tag}thumb:${e.subject}`,
};

const IMPLS = [ours("apply"), ours("run"), powertools];
const clients = Array.from({ length: workers }, () => new Redis(url));
const counters: RequestCounter[] = clients.map((c) => countValkeyCommands(c));
const commands = () => counters.reduce((n, c) => n + c.total(), 0);
const resetCommands = () => {
  for (const c of counters) c.reset();
};
let runs = 0;

/** The server's CPU so far (ms, user and system), from INFO: other users of a shared server count too. */
async function serverCpuMs(): Promise<number> {
  const info = await (clients[0] as Redis).info("cpu");
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
  return (field("used_cpu_user") + field("used_cpu_sys")) * 1000;
}

interface Run {
  eps: number;
  trips: number;
  /** CPU ms per event: this process (the clients and the implementation), the server. */
  clientCpu: number;
  serverCpu: number;
}

/** `events` new keys, `workers` at a time, each worker its own instance: events/s and commands per event. */
async function throughput(impl: Impl, events: number): Promise<Run> {
  const tag = `${prefix}${++runs}:`;
  const delivers = clients.map((c) => impl.open(c, tag));
  const server0 = await serverCpuMs();
  resetCommands();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await onWorkers(delivers, events, (deliver, i) => deliver(makeEvent(`k-${i}`, 1)));
  const eps = events / ((performance.now() - t0) / 1000);
  const cpu = process.cpuUsage(cpu0);
  const trips = commands() / events;
  const serverCpu = ((await serverCpuMs()) - server0) / events;
  return { eps, trips, clientCpu: (cpu.user + cpu.system) / 1000 / events, serverCpu };
}

/** Sequential new events on one client, the implementations interleaved event by event. */
async function latencies(count: number): Promise<Map<string, number[]>> {
  const all = [raw, ...IMPLS];
  const client = clients[0] as Redis;
  const delivers = all.map((impl) => impl.open(client, `${prefix}${++runs}:`));
  const samples = new Map(all.map((impl) => [impl.name, [] as number[]]));
  const warmup = 50;
  for (let i = 0; i < warmup + count; i++) {
    for (let j = 0; j < all.length; j++) {
      const k = (i + j) % all.length;
      const t0 = performance.now();
      await delivers[k]?.(makeEvent(`l-${i}`, 1));
      if (i >= warmup) samples.get(all[k]?.name ?? "")?.push(performance.now() - t0);
    }
  }
  return samples;
}

interface Trips {
  fresh: number;
  duplicate: number;
  stale: number;
  /** What the effect's key holds after version 2, its duplicate, then version 1 (older, arriving late). */
  holds: string | null;
}

/** Commands of one new event, one duplicate and one stale (older) event, per implementation. */
async function roundTrips(): Promise<Map<string, Trips>> {
  const out = new Map<string, Trips>();
  const client = clients[0] as Redis;
  for (const impl of [raw, ...IMPLS]) {
    const tag = `${prefix}${++runs}:`;
    const deliver = impl.open(client, tag);
    const count = async (e: BenchEvent) => {
      resetCommands();
      await deliver(e);
      return commands();
    };
    const fresh = await count(makeEvent("rt", 2));
    const duplicate = await count(makeEvent("rt", 2));
    const stale = await count(makeEvent("rt", 1));
    const holds = await client.get(impl.effectKey(tag, makeEvent("rt", 1)));
    out.set(impl.name, { fresh, duplicate, stale, holds });
  }
  return out;
}

function staleSnapshotLine(name: string, r: StaleSnapshotRun): string {
  const o = r.outcomes;
  return `  ${name}: A read "${r.snapshot}"; C ${o.c}, A ${o.a}, next redelivery ${o.again}; handler ran ${r.handlerRuns}×, effect applied ${r.effects}×${r.recordDuringA ? `; while A's handler ran the record was "${r.recordDuringA}"` : ""}`;
}

async function main(): Promise<void> {
  const events = Number(opts.events);
  for (const impl of [raw, ...IMPLS]) await throughput(impl, 500); // warm-up: scripts cached, JIT warm
  console.log(
    `valkey bench on ${new URL(url).host}, ${workers} workers (a client each), ${events} new keys per run; load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")} on ${cpus().length} cores`,
  );
  console.log(
    "\nround trips (commands at the client) per event: new, duplicate, stale (an older version, late)",
  );
  for (const [name, t] of await roundTrips())
    console.log(
      `  ${name}: ${t.fresh}, ${t.duplicate}, ${t.stale}; the effect holds ${t.holds} after v2, v2, v1`,
    );
  const shares = new Map<string, number[]>();
  const eps = new Map<string, number[]>();
  const trips = new Map<string, number>();
  const cpu = new Map<string, { client: number[]; server: number[] }>();
  const note = (name: string, r: Run) => {
    const c = cpu.get(name) ?? { client: [], server: [] };
    c.client.push(r.clientCpu);
    c.server.push(r.serverCpu);
    cpu.set(name, c);
  };
  for (let r = 0; r < Number(opts.rounds); r++) {
    for (const impl of IMPLS) {
      const before = await throughput(raw, events);
      const mine = await throughput(impl, events);
      const after = await throughput(raw, events);
      const share = mine.eps / ((before.eps + after.eps) / 2);
      shares.set(impl.name, [...(shares.get(impl.name) ?? []), share]);
      eps.set(impl.name, [...(eps.get(impl.name) ?? []), mine.eps]);
      eps.set(raw.name, [...(eps.get(raw.name) ?? []), before.eps, after.eps]);
      trips.set(impl.name, mine.trips);
      trips.set(raw.name, after.trips);
      for (const [name, run] of [
        [raw.name, before],
        [impl.name, mine],
        [raw.name, after],
      ] as const)
        note(name, run);
      console.log(
        `round ${r}: ${impl.name} ${Math.round(mine.eps)}/s vs raw ${Math.round(before.eps)}–${Math.round(after.eps)}/s = ${round(100 * share, 1)}%`,
      );
    }
  }
  console.log(`\nthroughput at ${workers} workers (median of rounds), commands per event in the run:`);
  console.log(
    `  ${raw.name}: ${Math.round(percentile(eps.get(raw.name) ?? [], 50))}/s = 100%, ${round(trips.get(raw.name) ?? 0, 2)} commands`,
  );
  for (const [name, s] of shares)
    console.log(
      `  ${name}: ${Math.round(percentile(eps.get(name) ?? [], 50))}/s = ${round(100 * percentile(s, 50), 1)}% [${s.map((x) => round(100 * x, 1)).join(", ")}], ${round(trips.get(name) ?? 0, 2)} commands`,
    );
  console.log("CPU ms per event (median of runs): this process (clients and implementation), the server");
  for (const [name, c] of cpu)
    console.log(`  ${name}: ${round(percentile(c.client, 50), 3)}, ${round(percentile(c.server, 50), 3)}`);
  const latency = Number(opts.latency);
  if (latency > 0) {
    const samples = await latencies(latency);
    const base = percentile(samples.get(raw.name) ?? [], 50);
    console.log(`\nsequential latency of a new event over ${latency} events (one client):`);
    for (const [name, s] of samples) {
      const p50 = percentile(s, 50);
      console.log(
        `  ${name}: p50 ${round(p50, 3)} ms = ${round(p50 / base, 2)}×, p99 ${round(percentile(s, 99), 3)} ms`,
      );
    }
  }
  console.log(
    "\nPowertools #5714: C's in-progress record outlives its deadline while C runs; A reads it, C completes, A acts:",
  );
  const client = clients[0] as Redis;
  console.log(staleSnapshotLine("powertools 2.35.0", await powertoolsStaleSnapshot(client, prefix)));
  console.log(staleSnapshotLine("ours", await oursStaleSnapshot(client, prefix)));
}

try {
  await main();
} finally {
  await deleteKeys(clients[0] as Redis, prefix);
  await Promise.all(clients.map((c) => c.quit()));
}
