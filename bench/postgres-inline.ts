/**
 * Inline state on PostgreSQL next to the state table and a raw conditional upsert, side by side in one process on
 * one PostgreSQL server (EONCE_POSTGRES_URL, default the local one), interleaved round by round so that load drift
 * hits all alike. Each implementation writes the same row per event (a thumbnail name and the event's position):
 *
 * - `raw upsert`: `INSERT … ON CONFLICT DO UPDATE … WHERE` the stored position is older: the usual SQL fix, one
 *   statement, no dedupe of the same position, no replay, no fencing;
 * - `inline apply`: `InlinePostgresStore` + `guard.apply`: claim, row and commit in one statement;
 * - `inline run`: the same store with `guard.run`: claim, then commit with the row (2 statements);
 * - `state table apply`: `PostgresStore` + `guard.apply` with the row as a fenced upsert folded in (one transaction:
 *   BEGIN, state, upsert, COMMIT);
 * - `state table run`: `PostgresStore` + `guard.run`, the same upsert folded into the commit's transaction.
 *
 *   tsx bench/postgres-inline.ts [--workers 16] [--events 3000] [--rounds 3] [--latency 500] [--prepared]
 *
 * Prints events/s (share of the raw upsert's, median of rounds), round trips per new event (statements, BEGIN and
 * COMMIT counted), and the sequential p50 latency of a new event over the raw upsert's.
 */
import { randomUUID } from "node:crypto";
import { Command } from "commander";
import pg from "pg";
import { createGuard, type Guard } from "../src/core/guard.js";
import {
  InlinePostgresStore,
  migrate,
  migrateInline,
  PostgresFencedSink,
  PostgresStore,
} from "../src/stores/postgres/index.js";
import { runStatement } from "../src/stores/postgres/prepared.js";
import { countingPool } from "../test/kit/postgres.js";
import { type BenchEvent, makeEvent } from "./events.js";
import { percentile, round } from "./stats.js";

const opts = new Command()
  .option("--workers <n>", "concurrent workers (and pool connections)", "16")
  .option("--events <n>", "distinct keys per throughput run", "3000")
  .option("--rounds <n>", "interleaved rounds", "3")
  .option("--latency <n>", "sequential events per implementation for p50 (0: none)", "500")
  .option("--prepared", "named (server-prepared) statements for every implementation, the raw upsert too")
  .parse()
  .opts<{ workers: string; events: string; rounds: string; latency: string; prepared?: boolean }>();
const preparedStatements = opts.prepared === true;
const workers = Number(opts.workers);

const url = process.env.EONCE_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const pool = new pg.Pool({ connectionString: url, max: workers });
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

function inline(mode: "apply" | "run"): Impl {
  return {
    name: `inline ${mode}`,
    async open(tag) {
      await rowTable(tag);
      await migrateInline(pool, { schema, table: tag });
      const store = new InlinePostgresStore({ pool: counted, schema, table: tag, preparedStatements });
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

const IMPLS = [inline("apply"), inline("run"), stateTable("apply"), stateTable("run")];
let n = 0;

async function throughput(impl: Impl, events: number): Promise<{ eps: number; trips: number }> {
  const deliver = await impl.open(`t${++n}`);
  let next = 0;
  reset();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < events) await deliver(makeEvent(`k-${next++}`, 1));
    }),
  );
  return { eps: events / ((performance.now() - t0) / 1000), trips: roundTrips() / events };
}

async function latencyP50(impl: Impl, count: number): Promise<number> {
  const deliver = await impl.open(`t${++n}`);
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await deliver(makeEvent(`l-${i}`, 1));
    samples.push(performance.now() - t0);
  }
  return percentile(samples, 50);
}

try {
  await pool.query(`CREATE SCHEMA "${schema}"`);
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
    const base = await latencyP50(raw, latency);
    console.log(`\nsequential p50 of a new event over ${latency} events: raw upsert ${round(base, 3)} ms`);
    for (const impl of IMPLS) {
      const p50 = await latencyP50(impl, latency);
      console.log(`  ${impl.name}: ${round(p50, 3)} ms = ${round(p50 / base, 2)}×`);
    }
  }
} finally {
  await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await pool.end();
}
