import { randomUUID } from "node:crypto";
import { type Backend, taggedSink } from "../../sim/backend.js";
import { quiet } from "../../sim/quiet.js";
import { type PostgresAtomicWrite, postgresWrite } from "./atomic-write.js";
import { createInlineChaosTables } from "./inline-sim-backend.js";
import { migrate, qualified } from "./schema.js";
import { COLD_START_LOCK_TIMEOUT_MS, coldStarts, holdReader } from "./sim-cold-start.js";
import type { PostgresChaosEnv } from "./sim-env.js";
import { historyOutbox } from "./sim-outbox.js";
import { ownChaosSchema } from "./sim-schema.js";
import { PostgresFencedSink } from "./sink.js";
import { toRecord } from "./sql.js";
import { createPostgresStepEffectsTable, PostgresStepEffects } from "./step-effects.js";
import { PostgresStore } from "./store.js";

/** The server `--store postgres` uses unless `EONCE_POSTGRES_URL` names another. */
export const CHAOS_POSTGRES_URL = process.env.EONCE_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export async function postgresChaosEnv(url = CHAOS_POSTGRES_URL): Promise<PostgresChaosEnv> {
  // pg is an optional peer: loaded only when a run asks for postgres.
  const { default: pg } = await import("pg");
  const owner = new pg.Client({ connectionString: url });
  await owner.connect();
  const { schema, drop } = await ownChaosSchema(owner).catch(async (error: unknown) => {
    await owner.end();
    throw error;
  });
  const pool = new pg.Pool({ connectionString: url, max: 16 });
  try {
    await migrate(pool, { schema, table: "state" });
    await pool.query(
      `CREATE TABLE ${qualified(schema, "sink")} (pk text PRIMARY KEY, src_pos text, src_fence bigint)`,
    );
    await pool.query(
      `CREATE TABLE ${qualified(schema, "counter")} (id text PRIMARY KEY, n integer NOT NULL, fences bigint[] NOT NULL)`,
    );
    await createInlineChaosTables({ pool, schema });
    await createPostgresStepEffectsTable(pool, { schema, tableName: "steps" });
  } catch (error) {
    await pool.end();
    await drop();
    throw error;
  }
  return {
    pool,
    schema,
    newPool: (max) => new pg.Pool({ connectionString: url, max }),
    close: async () => {
      await pool.end();
      await drop();
    },
  };
}

/**
 * The Postgres store, its fenced sink and a counter table whose folded effect is an unfenced upsert adding 1, in
 * the commit's transaction. All I/O is real: the scheduler waits for each statement.
 */
export function postgresBackend(env: PostgresChaosEnv): Backend {
  const { pool, schema } = env;
  const store = new PostgresStore({ pool, schema, table: "state" });
  const sink = new PostgresFencedSink({ pool, schema, table: "sink" });
  const counter = qualified(schema, "counter");
  const one = async (table: string, column: string, key: string) =>
    (await pool.query(`SELECT * FROM ${qualified(schema, table)} WHERE ${column} = $1`, [key])).rows[0];
  return {
    name: "postgres",
    store,
    sinkReportsItself: false,
    // Not fenced: a second application must show as a count of 2.
    counter: (e, fence): PostgresAtomicWrite =>
      postgresWrite(
        `INSERT INTO ${counter} AS c (id, n, fences) VALUES ($1, 1, ARRAY[$2::bigint])
         ON CONFLICT (id) DO UPDATE SET n = c.n + 1, fences = c.fences || $2::bigint`,
        [e.counterId, fence],
        `count ${e.counterId} f${fence}`,
      ),
    sinkAtomic: taggedSink((e, pos, fence) => sink.atomicUpsert({ position: pos, fence }, { pk: e.subject })),
    sinkPut: (e, pos, fence) => sink.put({ position: pos, fence }, { pk: e.subject }),
    readCounter: async (e) => {
      const row = await one("counter", "id", e.counterId);
      return { count: Number(row?.n ?? 0), fences: ((row?.fences ?? []) as string[]).map(Number) };
    },
    readSink: async (subject) => {
      const row = await one("sink", "pk", subject);
      return row ? { pos: String(row.src_pos), fence: Number(row.src_fence) } : undefined;
    },
    readState: async (key) => {
      const out = await pool.query(
        `SELECT s.*, octet_length(row_to_json(s)::text) AS row_bytes FROM ${qualified(schema, "state")} s WHERE state_key = $1`,
        [key],
      );
      const row = out.rows[0];
      return row
        ? { state: toRecord(row), bytes: Number(row.row_bytes) }
        : { state: undefined, bytes: undefined };
    },
    forget: async (key) => {
      await pool.query(`DELETE FROM ${qualified(schema, "state")} WHERE state_key = $1`, [key]);
    },
    coldStart: (workers) => {
      const fresh = `cold_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
      return coldStarts(
        env,
        workers,
        (p) => migrate(p, { schema, table: "state", lockTimeoutMs: COLD_START_LOCK_TIMEOUT_MS }),
        (p) => migrate(p, { schema, table: fresh, lockTimeoutMs: COLD_START_LOCK_TIMEOUT_MS }),
        `DROP TABLE IF EXISTS ${qualified(schema, fresh)}`,
      );
    },
    holdReader: (ms) => holdReader(env, "state", ms),
    stepEffects: (clock) => new PostgresStepEffects({ pool, schema, tableName: "steps", clock, ...quiet() }),
    outbox: () => historyOutbox(env, "postgres", "state"),
  };
}
