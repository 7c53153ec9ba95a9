import { randomUUID } from "node:crypto";
import { INLINE_RESERVED_PREFIX } from "../../core/inline-prefix.js";
import { stateKey } from "../../core/state-key.js";
import type { Backend, EffectTarget } from "../../sim/backend.js";
import type { TaggedWrite } from "../../sim/faulty-store.js";
import { FORGOTTEN_COLUMNS } from "./inline-admin.js";
import { inlineFunctions } from "./inline-functions.js";
import { migrateInline } from "./inline-schema.js";
import { InlineStatements } from "./inline-sql.js";
import { InlinePostgresStore } from "./inline-store.js";
import { qualified, quote } from "./schema.js";
import { COLD_START_LOCK_TIMEOUT_MS, coldStarts, holdReader } from "./sim-cold-start.js";
import type { PostgresChaosEnv } from "./sim-env.js";
import { historyOutbox } from "./sim-outbox.js";

/** The user table of inline state in a run's schema. */
const ROWS = "inline_rows";
const LOG = "inline_counter_log";

/**
 * The user table (`inline_rows`: the sink's `sink_pos`, `sink_fence`, and the counter's `counter_id`,
 * `counter_fence`) with the state columns, and the counter's log. A row write can only set values, so an increment
 * would hide a second application: instead a trigger logs every write that sets `counter_id` (one line per
 * application) and clears it, so the row never keeps it and a later write does not log it again.
 */
export async function createInlineChaosTables(env: Pick<PostgresChaosEnv, "pool" | "schema">): Promise<void> {
  const { pool, schema } = env;
  const rows = qualified(schema, ROWS);
  const log = qualified(schema, LOG);
  const fn = qualified(schema, "inline_count");
  await pool.query(
    `CREATE TABLE ${rows} (pk text PRIMARY KEY, sink_pos text, sink_fence bigint, counter_id text, counter_fence bigint)`,
  );
  await migrateInline(pool, { schema, table: ROWS });
  await pool.query(`CREATE TABLE ${log} (id text NOT NULL, fence bigint NOT NULL)`);
  await pool.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.counter_id IS NOT NULL THEN
    INSERT INTO ${log} (id, fence) VALUES (NEW.counter_id, NEW.counter_fence);
    NEW.counter_id := NULL;
    NEW.counter_fence := NULL;
  END IF;
  RETURN NEW;
END $$`);
  await pool.query(
    `CREATE TRIGGER ${quote("inline_count")} BEFORE INSERT OR UPDATE ON ${rows} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
  );
}

/**
 * Inline state on PostgreSQL (`InlinePostgresStore`): as `inlineBackend` on DynamoDB, both effects live in the
 * event's row, the sink as the subject's row and the counter as a logged row write (above); a direct sink write is
 * `putRow`. Every statement is real; the scheduler waits for each.
 */
export function postgresInlineBackend(env: PostgresChaosEnv, rowKey?: (stateKey: string) => string): Backend {
  const { pool, schema } = env;
  const store = new InlinePostgresStore({
    pool,
    schema,
    table: ROWS,
    preparedStatements: true,
    // The server functions, their calls named: the simulator's faults on the default path.
    serverFunctions: true,
    ...(rowKey ? { rowKey } : {}),
  });
  const rowOf = async (key: string): Promise<Record<string, unknown> | undefined> =>
    (await pool.query(`SELECT * FROM ${qualified(schema, ROWS)} WHERE pk = $1`, [store.rowKeyOf(key)]))
      .rows[0];
  const ctx = (e: EffectTarget, fence: number) => ({ stateKey: e.key, fence });
  const sinkColumns = (pos: string, fence: number) => ({ sink_pos: pos, sink_fence: fence });
  return {
    name: "postgres-inline",
    store,
    sinkReportsItself: false,
    counter: (e, fence) => store.row(ctx(e, fence), { counter_id: e.counterId, counter_fence: fence }),
    // The store folds only writes it made itself: the tag goes onto that very object.
    sinkAtomic: (e, pos, fence): TaggedWrite =>
      Object.assign(store.row(ctx(e, fence), sinkColumns(pos, fence)), {
        chaos: { subject: e.subject, pos, fence },
      }),
    sinkPut: (e, pos, fence) => store.putRow(ctx(e, fence), sinkColumns(pos, fence)),
    readCounter: async (e) => {
      const out = await pool.query(`SELECT fence FROM ${qualified(schema, LOG)} WHERE id = $1`, [
        e.counterId,
      ]);
      const fences = out.rows.map((r: { fence: unknown }) => Number(r.fence));
      return { count: fences.length, fences };
    },
    readSink: async (subject) => {
      const row = await rowOf(stateKey(subject, "", true));
      return row?.sink_pos != null ? { pos: String(row.sink_pos), fence: Number(row.sink_fence) } : undefined;
    },
    // The state's size is that of its `eo_*` columns: the user's row around it is the user's.
    readState: async (key) => {
      const row = await rowOf(key);
      const own = Object.entries(row ?? {}).filter(
        ([k, v]) => k.startsWith(INLINE_RESERVED_PREFIX) && v !== null,
      );
      const state = await store.read(key);
      return { state, bytes: state ? Buffer.byteLength(JSON.stringify(Object.fromEntries(own))) : undefined };
    },
    // The state goes, the user's columns stay (as when something else rewrites the row without it).
    forget: async (key) => {
      // The state goes, the row's write stamp stays, as the operator's forget leaves it (FORGOTTEN_COLUMNS).
      const clear = FORGOTTEN_COLUMNS.map((c) => `${c} = NULL`).join(", ");
      await pool.query(`UPDATE ${qualified(schema, ROWS)} SET ${clear} WHERE pk = $1`, [store.rowKeyOf(key)]);
    },
    coldStart: (workers) => inlineColdStart(env, workers),
    holdReader: (ms) => holdReader(env, ROWS, ms),
    outbox: () => historyOutbox(env, "postgres-inline", ROWS),
  };
}

/** Cold starts of inline state: the fresh table is the user's (their deploy made it); they add the state columns. */
async function inlineColdStart(env: PostgresChaosEnv, workers: number): Promise<void> {
  const { pool, schema } = env;
  const fresh = `cold_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const table = qualified(schema, fresh);
  const made = Object.values(inlineFunctions(schema, fresh, new InlineStatements(table, "pk")));
  await pool.query(`CREATE TABLE ${table} (pk text PRIMARY KEY, sink_pos text)`);
  await coldStarts(
    env,
    workers,
    (p) => migrateInline(p, { schema, table: ROWS, lockTimeoutMs: COLD_START_LOCK_TIMEOUT_MS }),
    (p) => migrateInline(p, { schema, table: fresh, lockTimeoutMs: COLD_START_LOCK_TIMEOUT_MS }),
    // The functions do not depend on the table (their key type is copied at creation): dropped by name.
    `DROP TABLE IF EXISTS ${table}; DROP FUNCTION IF EXISTS ${made.map((f) => qualified(schema, f.name)).join(", ")}`,
  );
}
