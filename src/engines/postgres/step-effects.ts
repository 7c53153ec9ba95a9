import { StoreError } from "../../core/errors.js";
import { resolveOptions, schemaFor } from "../../core/options.js";
import { StepEffectsNotReadyError } from "../../durable/errors.js";
import type { DispatchedExecution } from "../../durable/payload.js";
import { StepEffects } from "../../durable/step-effects.js";
import type { StepCommit, StepCommitAnswer, StepEffectsEngine } from "../../durable/step-engine.js";
import { fenceHolder, fenceKey, positionOf, stoppedExec } from "../../durable/step-keys.js";
import { STEP_EFFECTS_FIELDS, type StepEffectsCommonOptions } from "../../durable/step-options.js";
import { applyWrites, isPostgresAtomicWrite, type PostgresAtomicWrite } from "./atomic-write.js";
import { postgresEngine } from "./engine.js";
import { isRetryablePostgresError, postgresStoreError } from "./errors.js";
import { POSTGRES_LIMITS } from "./limits.js";
import { lockTimeoutField, migrationOptions } from "./migration.js";
import type { PostgresClient, PostgresPool } from "./pool.js";
import { DEFAULT_SCHEMA, identifier, migrateTable, poolField, qualified, quote } from "./schema.js";

const WHAT = "PostgresStepEffects";

/** The table of step markers and execution fences, unless `tableName` says otherwise. */
export const DEFAULT_STEP_EFFECTS_TABLE = "eonce_step_effects";

/**
 * How many times a step's transaction runs when its COMMIT failed retryably (the answer lost: it may have landed).
 * Safe: a landed attempt left its marker, which the next attempt finds with this step's own fence (`processed`).
 */
const COMMIT_ATTEMPTS = 3;

/** The options of `PostgresStepEffects`. */
export interface PostgresStepEffectsOptions extends StepEffectsCommonOptions {
  /** A `pg.Pool` on the database of your writes: each step is one transaction on one of its clients. */
  pool: PostgresPool;
  /** Default `public`. */
  schema?: string;
  /** The table of markers and fences (`createPostgresStepEffectsTable`). Default `eonce_step_effects`. */
  tableName?: string;
}

const OPTIONS = schemaFor<PostgresStepEffectsOptions>()({
  pool: poolField,
  schema: identifier(DEFAULT_SCHEMA),
  tableName: identifier(DEFAULT_STEP_EFFECTS_TABLE),
  ...STEP_EFFECTS_FIELDS,
});

/**
 * Guarded steps on PostgreSQL: one transaction per step on one pooled client holds the step's marker (inserted
 * first: a step applied before answers with its stored result, whatever the fence says now), the subject's execution
 * fence (an upsert on condition that it is absent, older, or this execution's) and your writes (`postgresWrite`,
 * `PostgresFencedSink.atomicUpsert`, …; at most 1000; one that changes no row is `stale`, as in a store commit).
 * Create the table with `createPostgresStepEffectsTable`; sweep expired markers with `deleteExpired`.
 */
export class PostgresStepEffects extends StepEffects<PostgresAtomicWrite> {
  /** The qualified table, e.g. `"public"."eonce_step_effects"`. */
  readonly tableName: string;
  readonly #engine: PostgresStepEngine;

  constructor(options: PostgresStepEffectsOptions) {
    const o = resolveOptions(WHAT, OPTIONS, options);
    const engine = new PostgresStepEngine(o.pool, qualified(o.schema, o.tableName));
    super(engine, o);
    this.#engine = engine;
    this.tableName = engine.table;
  }

  /** Deletes the markers whose `expires_at` (epoch seconds) has passed; fences never expire. Returns how many. */
  deleteExpired(nowSeconds = Math.floor(Date.now() / 1000)): Promise<number> {
    return this.#engine.deleteExpired(nowSeconds);
  }
}

/** The options of `createPostgresStepEffectsTable`. */
export interface PostgresStepEffectsTableOptions {
  /** Default `public`; created if missing. */
  schema?: string;
  /** Default `eonce_step_effects`. */
  tableName?: string;
  /** How long the migration waits for a lock when something is missing (as `migrate`'s). Default 3000 ms. */
  lockTimeoutMs?: number;
}

const TABLE_OPTIONS = schemaFor<PostgresStepEffectsTableOptions>()({
  schema: identifier(DEFAULT_SCHEMA),
  tableName: identifier(DEFAULT_STEP_EFFECTS_TABLE),
  lockTimeoutMs: lockTimeoutField,
});

/**
 * One table for both records, keyed by `pk`: fences (`f#<state key>`: pos, exec, subject) and markers
 * (`m#<execution>#<step>`: all columns). Positions compare byte-wise (`COLLATE "C"`) as JavaScript compares them.
 * The fence is the clock's microseconds (~1.8e15): bigint, as the state table's fence.
 */
function stepTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  pk text PRIMARY KEY,             -- f#<state key> (the subject's execution fence) or m#<execution>#<step> (a marker)
  pos text COLLATE "C" NOT NULL,   -- fence: the newest execution's position; marker: its execution's
  exec text NOT NULL,              -- fence: the newest execution (!stopped:<name> once stopped); marker: its execution
  subject text NOT NULL,
  step text,                       -- marker: the step's name
  fence bigint,                    -- marker: the applying attempt's fence, to recognise its own lost answer
  res text,                        -- marker: JSON of the step's result, returned when the step runs again
  applied_at_ms bigint,            -- marker: epoch ms it landed
  expires_at bigint                -- marker: epoch seconds after which deleteExpired may remove it; fences: NULL
)`;
}

/**
 * Creates the schema, the table and its index on `expires_at` when missing: as `migrate`, safe on every cold start
 * and in a deploy step (nothing missing: one catalog read, no lock; otherwise concurrent calls are serialised).
 */
export async function createPostgresStepEffectsTable(
  pool: PostgresPool,
  options: PostgresStepEffectsTableOptions = {},
): Promise<void> {
  const o = migrationOptions("createPostgresStepEffectsTable", TABLE_OPTIONS, options);
  await migrateTable(pool, {
    ...o,
    what: "createPostgresStepEffectsTable",
    ddl: stepTableDdl,
    // Fences have no expiry: a partial index holds the markers only.
    indexDdl: (table, index) =>
      `CREATE INDEX IF NOT EXISTS ${quote(index)} ON ${table} (expires_at) WHERE expires_at IS NOT NULL`,
  });
}

/**
 * The statements. Isolation is READ COMMITTED (set by each step's BEGIN): every statement sees the latest committed
 * rows, and `INSERT … ON CONFLICT` waits for a concurrent inserter of the same key and then decides on its outcome.
 * - Two applications of one step: the second's marker insert waits on the first's uncommitted key; once the first
 *   commits it conflicts (DO NOTHING) and reads the marker; if the first rolled back, it inserts.
 * - Two executions of one subject: the fence upsert locks the fence row (ON CONFLICT DO UPDATE locks it even when its
 *   WHERE refuses) and evaluates the condition on the newest committed version, so fence moves are serialised and a
 *   step's writes run while its fence still holds. Locks are taken marker, fence, then your writes' rows, so two
 *   steps cannot wait on each other's marker or fence.
 */
function stepSql(t: string) {
  // The fence moves to $3 (an execution, or its stopped mark) at position $2: absent, older, or the same execution.
  const fenceUpsert = `INSERT INTO ${t} AS f (pk, pos, exec, subject) VALUES ($1, $2, $3, $4)
ON CONFLICT (pk) DO UPDATE SET pos = EXCLUDED.pos, exec = EXCLUDED.exec
WHERE f.pos < EXCLUDED.pos OR (f.pos = EXCLUDED.pos AND f.exec = EXCLUDED.exec)`;
  return {
    markerInsert: `INSERT INTO ${t} (pk, pos, exec, subject, step, fence, res, applied_at_ms, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (pk) DO NOTHING`,
    fenceUpsert,
    // stop: also this execution's own fence ($5, the execution's name).
    stop: `${fenceUpsert} OR (f.pos = EXCLUDED.pos AND f.exec = $5)`,
    read: `SELECT pos, exec, fence, res FROM ${t} WHERE pk = $1`,
    deleteExpired: `DELETE FROM ${t} WHERE expires_at < $1`,
  };
}

/** A step whose COMMIT failed: without an answer (no SQLSTATE), whether it landed is unknown. */
type Lost = { kind: "lost"; error: unknown };

class PostgresStepEngine implements StepEffectsEngine<PostgresAtomicWrite> {
  readonly what = WHAT;
  readonly maxWrites = POSTGRES_LIMITS.maxWritesPerCommit;
  readonly maxResultBytes = POSTGRES_LIMITS.maxResultBytes;
  readonly #sql: ReturnType<typeof stepSql>;

  constructor(
    private readonly pool: PostgresPool,
    readonly table: string,
  ) {
    this.#sql = stepSql(table);
  }

  readonly displayName = postgresEngine.displayName;
  readonly isWrite = isPostgresAtomicWrite;

  async ready(): Promise<void> {
    let found: unknown;
    try {
      const { rows } = await this.pool.query<{ t: string | null }>("select to_regclass($1) as t", [
        this.table,
      ]);
      found = rows[0]?.t;
    } catch (error) {
      throw postgresStoreError("ready", this.table, error);
    }
    if (found === null || found === undefined) {
      throw new StepEffectsNotReadyError(
        `${WHAT}: the table ${this.table} does not exist: call createPostgresStepEffectsTable(pool` +
          `${this.table === qualified(DEFAULT_SCHEMA, DEFAULT_STEP_EFFECTS_TABLE) ? "" : ", { schema, tableName }"})` +
          " on the cold start, before the first event",
      );
    }
  }

  async commit(step: StepCommit<PostgresAtomicWrite>): Promise<StepCommitAnswer> {
    const key = step.markerKey;
    for (let attempt = 1; ; attempt++) {
      const out = await this.#attempt(step, key);
      if (out.kind !== "lost") return out;
      if (attempt >= COMMIT_ATTEMPTS || !isRetryablePostgresError(out.error)) {
        throw postgresStoreError("step", key, out.error);
      }
    }
  }

  /** BEGIN; the marker; the fence; the writes; COMMIT. A marker or fence refusal rolls back at once. */
  async #attempt(step: StepCommit<PostgresAtomicWrite>, key: string): Promise<StepCommitAnswer | Lost> {
    let client: PostgresClient | undefined;
    try {
      client = await this.pool.connect();
      // Explicit: under a REPEATABLE READ default the racing inserts fail (40001) instead of waiting and deciding.
      await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
      const answer = await this.#steps(client, step, key);
      if (answer.kind !== "landed") {
        await client.query("ROLLBACK");
        return answer;
      }
      try {
        await client.query("COMMIT");
      } catch (error) {
        client.release(error instanceof Error ? error : true);
        client = undefined;
        return { kind: "lost", error };
      }
      return answer;
    } catch (error) {
      // The connection is dropped rather than reused: it may hold an open (failed) transaction.
      client?.release(error instanceof Error ? error : true);
      client = undefined;
      throw postgresStoreError("step", key, error);
    } finally {
      client?.release();
    }
  }

  async #steps(
    client: PostgresClient,
    step: StepCommit<PostgresAtomicWrite>,
    key: string,
  ): Promise<StepCommitAnswer> {
    const { execution } = step;
    const pos = positionOf(execution);
    const marker = await client.query(this.#sql.markerInsert, [
      key,
      pos,
      execution.executionName,
      execution.subject,
      step.stepName,
      step.fence,
      step.result ?? null,
      step.nowMs,
      step.expiresAtSeconds,
    ]);
    if ((marker.rowCount ?? 0) === 0) {
      const row = (await client.query(this.#sql.read, [key])).rows[0] as StepRow | undefined;
      // Only a sweep of an expired marker between the two statements removes it: the step is retried.
      if (!row) throw new StoreError(`PostgreSQL step of ${key}: the marker vanished while read; retry`);
      return {
        kind: "marker",
        fence: row.fence === null ? null : Number(row.fence),
        result: row.res ?? undefined,
      };
    }
    const fence = await client.query(this.#sql.fenceUpsert, this.#fenceParams(execution));
    if ((fence.rowCount ?? 0) === 0) {
      // Refused on the row the upsert locked: this read sees that version.
      const row = (await client.query(this.#sql.read, [fenceKey(execution)])).rows[0] as StepRow | undefined;
      return { kind: "fence", holder: fenceHolder(row?.pos, row?.exec) };
    }
    return { kind: "landed", writes: await applyWrites(client, step.writes) };
  }

  async stop(execution: DispatchedExecution): Promise<"stopped" | "stale"> {
    const params = [...this.#fenceParams(execution, stoppedExec(execution)), execution.executionName];
    try {
      const out = await this.pool.query(this.#sql.stop, params);
      return (out.rowCount ?? 0) > 0 ? "stopped" : "stale";
    } catch (error) {
      throw postgresStoreError("stop", execution.executionName, error);
    }
  }

  /** The fence upsert as a store commit folds it: a refusal there is reported `stale`, and the commit lands. */
  fenceWrite(execution: DispatchedExecution): PostgresAtomicWrite {
    return {
      engine: "postgres",
      description: `execution fence of ${execution.subject}`,
      sql: this.#sql.fenceUpsert,
      params: this.#fenceParams(execution),
    };
  }

  async readMarker(key: string): Promise<{ result: string | undefined } | undefined> {
    try {
      const row = (await this.pool.query(this.#sql.read, [key])).rows[0] as StepRow | undefined;
      return row && { result: row.res ?? undefined };
    } catch (error) {
      throw postgresStoreError("read", key, error);
    }
  }

  async deleteExpired(nowSeconds: number): Promise<number> {
    try {
      return (await this.pool.query(this.#sql.deleteExpired, [nowSeconds])).rowCount ?? 0;
    } catch (error) {
      throw postgresStoreError("deleteExpired", this.table, error);
    }
  }

  #fenceParams(execution: DispatchedExecution, exec = execution.executionName): unknown[] {
    return [fenceKey(execution), positionOf(execution), exec, execution.subject];
  }
}

/** A row as `read` returns it (bigint arrives as a string). */
interface StepRow {
  pos: string;
  exec: string;
  fence: string | null;
  res: string | null;
}
