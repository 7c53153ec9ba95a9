/**
 * Inline state on PostgreSQL next to the state table and a raw conditional upsert, side by side in one process on
 * one PostgreSQL server (EONCE_POSTGRES_URL, default the local one), interleaved round by round so that load drift
 * hits all alike. Each implementation writes the same row per event (a thumbnail name and the event's position):
 *
 * - `raw upsert`: `INSERT … ON CONFLICT DO UPDATE … WHERE` the stored position is older: the usual SQL fix, one
 *   statement, no dedupe of the same position, no replay, no fencing;
 * - `inline apply`: `InlinePostgresStore` + `guard.apply`: claim, row and commit in one statement, a call of the
 *   store's server function (`serverFunctions`, the default);
 * - `inline run`: the same store with `guard.run`: claim, then commit with the row (2 calls);
 * - `inline apply (statements)` and `inline run (statements)`: the same with `serverFunctions: false`, the statements
 *   sent as they are (named with `--prepared`);
 * - `state table apply`: `PostgresStore` + `guard.apply` with the row as a fenced upsert folded in (one transaction:
 *   BEGIN, state, upsert, COMMIT);
 * - `state table run`: `PostgresStore` + `guard.run`, the same upsert folded into the commit's transaction.
 *
 *   tsx bench/postgres-inline.ts [--workers 16] [--events 3000] [--rounds 3] [--latency 500] [--prepared]
 *                                [--one-way-ms 4 [--jitter-ms 1]] [--only "inline apply,inline apply (statements)"]
 *
 * Prints events/s (share of the raw upsert's, median of rounds), round trips per new event (statements, BEGIN and
 * COMMIT counted), and the sequential p50 and p99 latency of a new event over the raw upsert's. With --one-way-ms,
 * the pool connects through bench/latency-proxy.ts: every round trip pays twice that, as from Lambda to RDS.
 * EONCE_POSTGRES_URL may name a pooler (PgBouncer in transaction mode): the tables are made through it too.
 *
 * --cost [events]: instead, where a new event's time goes, sequentially on one connection: the server's CPU time per
 * event (the backend's, from Linux's /proc/<pid>/schedstat: PostgreSQL on this machine and reached directly) and the
 * client's, per implementation; with --prepared, of named statements. Unlike events/s, CPU time does not depend on
 * what else loads the machine.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Command } from "commander";
import pg from "pg";
import { createGuard, type Guard } from "../src/core/guard.js";
import {
  InlinePostgresStore,
  migrate,
  migrateInline,
  PostgresFencedSink,
  PostgresStore,
} from "../src/engines/postgres/index.js";
import { runStatement } from "../src/engines/postgres/prepared.js";
import { countingPool } from "../test/kit/postgres.js";
import { type BenchEvent, makeEvent } from "./events.js";
import { type LatencyProxy, startLatencyProxy } from "./latency-proxy.js";
import { onWorkers, workerIds } from "./on-workers.js";
import { percentile, round } from "./stats.js";

const opts = new Command()
  .option("--workers <n>", "concurrent workers (and pool connections)", "16")
  .option("--events <n>", "distinct keys per throughput run", "3000")
  .option("--rounds <n>", "interleaved rounds", "3")
  .option("--latency <n>", "sequential events per implementation for p50 (0: none)", "500")
  .option("--prepared", "named (server-prepared) statements for every implementation, the raw upsert too")
  .option("--one-way-ms <ms>", "connect through the latency proxy with this one-way delay")
  .option("--jitter-ms <ms>", "± jitter on the proxy's delay", "0")
  .option("--only <names>", "comma-separated implementations to run beside the raw upsert (default: all)")
  .option("--cost [events]", "server and client CPU time per new event, sequential on one connection")
  .parse()
  .opts<{
    workers: string;
    events: string;
    rounds: string;
    latency: string;
    prepared?: boolean;
    oneWayMs?: string;
    jitterMs: string;
    only?: string;
    cost?: string | boolean;
  }>();
const preparedStatements = opts.prepared === true;
const workers = Number(opts.workers);

const direct = process.env.EONCE_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const proxy: LatencyProxy | undefined =
  opts.oneWayMs === undefined
    ? undefined
    : await startLatencyProxy({
        target: { host: new URL(direct).hostname, port: Number(new URL(direct).port || 5432) },
        oneWayMs: Number(opts.oneWayMs),
        jitterMs: Number(opts.jitterMs),
      });
const url = proxy ? Object.assign(new URL(direct), { host: `${proxy.host}:${proxy.port}` }).href : direct;
if (proxy) console.log(`through the latency proxy: ${opts.oneWayMs} ms one way ± ${opts.jitterMs} ms`);
const costEvents = opts.cost === undefined ? 0 : opts.cost === true ? 2000 : Number(opts.cost);
// --cost: one connection, kept, so that one backend serves every statement.
const pool = new pg.Pool({ connectionString: url, max: costEvents > 0 ? 1 : workers, idleTimeoutMillis: 0 });
const schema = `bench_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
/** The pool the implementations use, counting what it runs. */
const { pool: counted, count, reset } = countingPool(pool);
/** Round trips so far: statements alone, and each transaction's statements with its BEGIN and COMMIT. */
const roundTrips = () => count.statements + count.inTransactions + 2 * count.transactions;

type Deliver = (event: BenchEvent) => Promise<unknown>;
interface Impl {
  name: string;
  /** A fresh table (or tables) for one run. */
  open(tag: string): Promise<Deliver>;
}

const thumb = (e: BenchEvent) => `thumbs/${e.key}@${e.version}`;
const rowTable = async (name: string) =>
  pool.query(
    `CREATE TABLE "${schema}"."${name}" (pk text PRIMARY KEY, thumb text, src_pos text COLLATE "C", src_fence bigint)`,
  );

const guarded = (
  guard: Guard,
  mode: "apply" | "run",
  write: (ctx: never, e: BenchEvent) => never,
): Deliver =>
  mode === "apply"
    ? (e) => guard.apply(e, (ctx) => ctx.atCommit(write(ctx as never, e)))
    : (e) => guard.run(e, async (ctx) => ctx.atCommit(write(ctx as never, e)));

function inline(mode: "apply" | "run", serverFunctions: boolean): Impl {
  return {
    name: `inline ${mode}${serverFunctions ? "" : " (statements)"}`,
    async open(tag) {
      await rowTable(tag);
      await migrateInline(pool, { schema, table: tag, serverFunctions });
      const options = { pool: counted, schema, table: tag, preparedStatements, serverFunctions };
      const store = new InlinePostgresStore(options);
      return guarded(
        createGuard({ store }),
        mode,
        (ctx: { stateKey: string }, e) => store.row(ctx, { thumb: thumb(e), src_pos: e.position }) as never,
      );
    },
  };
}

function stateTable(mode: "apply" | "run"): Impl {
  return {
    name: `state table ${mode}`,
    async open(tag) {
      await rowTable(tag);
      await migrate(pool, { schema, table: `${tag}_state` });
      const store = new PostgresStore({ pool: counted, schema, table: `${tag}_state`, preparedStatements });
      const sink = new PostgresFencedSink({ pool: counted, schema, table: tag });
      return guarded(
        createGuard({ store }),
        mode,
        (ctx: { position: string; fence: number }, e) =>
          sink.atomicUpsert(ctx, { pk: e.subject, thumb: thumb(e) }) as never,
      );
    },
  };
}

const raw: Impl = {
  name: "raw upsert",
  async open(tag) {
    await rowTable(tag);
    const sql = `INSERT INTO "${schema}"."${tag}" AS t (pk, thumb, src_pos) VALUES ($1, $2, $3)
      ON CONFLICT (pk) DO UPDATE SET thumb = EXCLUDED.thumb, src_pos = EXCLUDED.src_pos WHERE t.src_pos < EXCLUDED.src_pos`;
    return (e) => runStatement(counted, sql, [e.subject, thumb(e), e.position], preparedStatements);
  },
};

const ALL = [
  inline("apply", true),
  inline("run", true),
  inline("apply", false),
  inline("run", false),
  stateTable("apply"),
  stateTable("run"),
];
const only = opts.only?.split(",").map((name) => name.trim());
const IMPLS = only ? ALL.filter((i) => only.includes(i.name)) : ALL;
if (only && IMPLS.length !== only.length)
  throw new Error(`--only: the implementations are ${ALL.map((i) => i.name).join("; ")}`);
let n = 0;

async function throughput(impl: Impl, events: number): Promise<{ eps: number; trips: number }> {
  const deliver = await impl.open(`t${++n}`);
  reset();
  const t0 = performance.now();
  await onWorkers(workerIds(workers), events, (_, i) => deliver(makeEvent(`k-${i}`, 1)));
  return { eps: events / ((performance.now() - t0) / 1000), trips: roundTrips() / events };
}

async function latencyOf(impl: Impl, count: number): Promise<{ p50: number; p99: number }> {
  const deliver = await impl.open(`t${++n}`);
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await deliver(makeEvent(`l-${i}`, 1));
    samples.push(performance.now() - t0);
  }
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** µs of CPU per new event: the server's (its one backend's) and the client's (this process's). */
async function cost(impl: Impl, events: number): Promise<{ server: number; client: number }> {
  const deliver = await impl.open(`t${++n}`);
  for (let i = 0; i < 50; i++) await deliver(makeEvent(`w-${i}`, 1)); // plans made and cached
  const pid = (await pool.query("SELECT pg_backend_pid() AS pid")).rows[0].pid;
  const server = () => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1000;
  const s0 = server();
  const c0 = process.cpuUsage();
  for (let i = 0; i < events; i++) await deliver(makeEvent(`c-${i}`, 1));
  const c = process.cpuUsage(c0);
  return { server: (server() - s0) / events, client: (c.user + c.system) / events };
}

async function costs(events: number): Promise<void> {
  const rounds = new Map<string, { server: number; client: number }[]>();
  for (let r = 0; r < Number(opts.rounds); r++)
    for (const impl of [raw, ...IMPLS])
      rounds.set(impl.name, [...(rounds.get(impl.name) ?? []), await cost(impl, events)]);
  const median = (name: string, k: "server" | "client") =>
    percentile(
      (rounds.get(name) ?? []).map((x) => x[k]),
      50,
    );
  const total = (name: string) => median(name, "server") + median(name, "client");
  console.log(
    `\nCPU µs per new event, ${preparedStatements ? "named" : "plain"} statements (median of rounds):`,
  );
  for (const name of rounds.keys())
    console.log(
      `  ${name}: server ${round(median(name, "server"), 0)}, client ${round(median(name, "client"), 0)}, total ${round(total(name), 0)} = raw's × ${round(total(name) / total(raw.name), 2)}`,
    );
}

try {
  await pool.query(`CREATE SCHEMA "${schema}"`);
  if (costEvents > 0) await costs(costEvents);
  else await measure();
} finally {
  await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await pool.end();
  await proxy?.close();
}

async function measure(): Promise<void> {
  for (const impl of [raw, ...IMPLS]) await throughput(impl, 500); // warm-up
  const shares = new Map<string, number[]>();
  const trips = new Map<string, number>();
  for (let r = 0; r < Number(opts.rounds); r++) {
    for (const impl of IMPLS) {
      const before = await throughput(raw, Number(opts.events));
      const mine = await throughput(impl, Number(opts.events));
      const after = await throughput(raw, Number(opts.events));
      const share = mine.eps / ((before.eps + after.eps) / 2);
      shares.set(impl.name, [...(shares.get(impl.name) ?? []), share]);
      trips.set(impl.name, mine.trips);
      trips.set(raw.name, after.trips);
      console.log(
        `round ${r}: ${impl.name} ${Math.round(mine.eps)}/s vs raw ${Math.round(before.eps)}–${Math.round(after.eps)}/s = ${round(100 * share, 1)}%`,
      );
    }
  }
  console.log(
    `\nthroughput at ${workers} workers, ${opts.events} new keys (median of rounds), round trips per event:`,
  );
  console.log(`  raw upsert: 100%, ${trips.get(raw.name)} round trips`);
  for (const [name, s] of shares)
    console.log(
      `  ${name}: ${round(100 * percentile(s, 50), 1)}% [${s.map((x) => round(100 * x, 1)).join(", ")}], ${round(trips.get(name) ?? 0, 2)} round trips`,
    );
  const latency = Number(opts.latency);
  if (latency > 0) {
    const base = await latencyOf(raw, latency);
    console.log(
      `\nsequential latency of a new event over ${latency} events: raw upsert p50 ${round(base.p50, 3)} ms, p99 ${round(base.p99, 3)} ms`,
    );
    for (const impl of IMPLS) {
      const { p50, p99 } = await latencyOf(impl, latency);
      console.log(
        `  ${impl.name}: p50 ${round(p50, 3)} ms = ${round(p50 / base.p50, 2)}× (+${round(p50 - base.p50, 3)} ms), p99 ${round(p99, 3)} ms = ${round(p99 / base.p99, 2)}×`,
      );
    }
  }
}
