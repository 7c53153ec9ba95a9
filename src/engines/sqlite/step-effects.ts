import { UnsupportedAtomicWriteError } from "../../core/errors.js";
import { custom, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import type { DispatchedExecution } from "../../durable/payload.js";
import { StepEffects } from "../../durable/step-effects.js";
import type { StepCommit, StepCommitAnswer, StepEffectsEngine } from "../../durable/step-engine.js";
import { fenceHolder, fenceKey, positionOf, stoppedExec } from "../../durable/step-keys.js";
import { STEP_EFFECTS_FIELDS, type StepEffectsCommonOptions } from "../../durable/step-options.js";
import { applyWrites, isSqliteAtomicWrite, type SqliteAtomicWrite } from "./atomic-write.js";
import { type SqlParams, type Statements, sqliteError } from "./connection.js";
import { sqliteEngine } from "./engine.js";
import { SQL_IDENTIFIER } from "./schema.js";
import { SqliteStore, statementsOf } from "./store.js";

const WHAT = "SqliteStepEffects";

/** The table of step markers and execution fences, unless `tableName` says otherwise. */
export const DEFAULT_SQLITE_STEP_EFFECTS_TABLE = "eonce_step_effects";

/** The options of `SqliteStepEffects`. */
export interface SqliteStepEffectsOptions extends StepEffectsCommonOptions {
  /** The store on the database of your writes (`SqliteStore.atomicWrite`, `SqliteFencedSink.atomicPut`). */
  store: SqliteStore;
  /** The table of markers and fences, created on first use if missing. Default `eonce_step_effects`. */
  tableName?: string;
}

const OPTIONS = schemaFor<SqliteStepEffectsOptions>()({
  store: required(custom<SqliteStore>("a SqliteStore", (v) => v instanceof SqliteStore)),
  tableName: string({
    default: DEFAULT_SQLITE_STEP_EFFECTS_TABLE,
    pattern: SQL_IDENTIFIER,
    expected: "a plain SQL identifier",
  }),
  ...STEP_EFFECTS_FIELDS,
});

/**
 * Guarded steps on SQLite: one write transaction per step (`BEGIN IMMEDIATE`, the store's connection) holds the
 * step's marker (inserted first: a step applied before answers with its stored result, whatever the fence says now),
 * the subject's execution fence (an upsert on condition that it is absent, older, or this execution's) and your writes
 * (statements of the same store ending in `RETURNING`; at most 1000; one that returns no row is `stale`). The driver
 * is synchronous and the transaction takes the write lock first, so steps are serialised within the process and across
 * processes. Sweep expired markers with `deleteExpired`.
 */
export class SqliteStepEffects extends StepEffects<SqliteAtomicWrite> {
  readonly tableName: string;
  readonly #engine: SqliteStepEngine;

  constructor(options: SqliteStepEffectsOptions) {
    const o = resolveOptions(WHAT, OPTIONS, options);
    const engine = new SqliteStepEngine(o.store, o.tableName);
    super(engine, o);
    this.#engine = engine;
    this.tableName = o.tableName;
  }

  /** Deletes the markers whose `expires_at` (epoch seconds) has passed; fences never expire. Returns how many. */
  deleteExpired(nowSeconds = Math.floor(Date.now() / 1000)): number {
    return this.#engine.deleteExpired(nowSeconds);
  }
}

/**
 * One table for both records, keyed by `pk`: fences (`f#<state key>`: pos, exec, subject) and markers
 * (`m#<execution>#<step>`: all columns). TEXT compares bytewise (BINARY), which is position order.
 */
function stepTableDdl(t: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS "${t}" (
  pk            TEXT PRIMARY KEY,  -- f#<state key> (the subject's execution fence) or m#<execution>#<step> (a marker)
  pos           TEXT NOT NULL,     -- fence: the newest execution's position; marker: its execution's
  exec          TEXT NOT NULL,     -- fence: the newest execution (!stopped:<name> once stopped); marker: its execution
  subject       TEXT NOT NULL,
  step          TEXT,              -- marker: the step's name
  fence         INTEGER,           -- marker: the applying attempt's fence (clock microseconds)
  res           TEXT,              -- marker: JSON of the step's result, returned when the step runs again
  applied_at_ms INTEGER,           -- marker: epoch ms it landed
  expires_at    INTEGER            -- marker: epoch seconds after which deleteExpired may remove it; fences: NULL
) WITHOUT ROWID`,
    `CREATE INDEX IF NOT EXISTS "${t}_expires_at" ON "${t}" (expires_at) WHERE expires_at IS NOT NULL`,
  ];
}

function stepSql(t: string) {
  // The fence moves to @exec at position @pos: absent, older, or the same execution.
  const fenceUpsert = `INSERT INTO "${t}" AS f (pk, pos, exec, subject) VALUES (@pk, @pos, @exec, @subject)
ON CONFLICT (pk) DO UPDATE SET pos = excluded.pos, exec = excluded.exec
WHERE f.pos < excluded.pos OR (f.pos = excluded.pos AND f.exec = excluded.exec)`;
  return {
    markerInsert: `INSERT INTO "${t}" (pk, pos, exec, subject, step, fence, res, applied_at_ms, expires_at)
VALUES (@pk, @pos, @exec, @subject, @step, @fence, @res, @at, @exp) ON CONFLICT (pk) DO NOTHING RETURNING 1 AS ok`,
    // RETURNING: a row back means the fence moved (the store's rule for folded writes).
    fenceUpsert: `${fenceUpsert} RETURNING 1 AS ok`,
    // stop: also this execution's own fence (@own, the execution's name).
    stop: `${fenceUpsert} OR (f.pos = excluded.pos AND f.exec = @own) RETURNING 1 AS ok`,
    read: `SELECT pos, exec, fence, res FROM "${t}" WHERE pk = @pk`,
    deleteExpired: `DELETE FROM "${t}" WHERE expires_at < @now`,
  };
}

/** Carries a refusal's answer out of the transaction, which rolls back on the way (the marker inserted is undone). */
class RolledBack {
  constructor(readonly answer: StepCommitAnswer) {}
}

class SqliteStepEngine implements StepEffectsEngine<SqliteAtomicWrite> {
  readonly what = WHAT;
  readonly maxWrites = sqliteEngine.limits.maxWritesPerCommit;
  readonly maxResultBytes = sqliteEngine.limits.maxResultBytes;
  readonly #sql: ReturnType<typeof stepSql>;
  #created = false;

  constructor(
    private readonly store: SqliteStore,
    private readonly table: string,
  ) {
    this.#sql = stepSql(table);
  }

  readonly displayName = sqliteEngine.displayName;
  readonly isWrite = isSqliteAtomicWrite;

  checkWrite(write: SqliteAtomicWrite): void {
    if (write.store !== this.store) {
      throw new UnsupportedAtomicWriteError(`${WHAT} folds writes of its own store's database only`);
    }
  }

  /** BEGIN IMMEDIATE; the marker; the fence; the writes; COMMIT. A marker or fence refusal rolls back at once. */
  async commit(step: StepCommit<SqliteAtomicWrite>): Promise<StepCommitAnswer> {
    const { execution } = step;
    const key = step.markerKey;
    const marker: SqlParams = {
      ...this.#fenceParams(execution),
      pk: key,
      step: step.stepName,
      fence: step.fence,
      res: step.result ?? null,
      at: step.nowMs,
      exp: step.expiresAtSeconds,
    };
    return this.#run("step", key, (s) => {
      try {
        return s.immediate((): StepCommitAnswer => {
          if (!s.get(this.#sql.markerInsert, marker)) {
            const row = s.get(this.#sql.read, { pk: key }); // under the write lock: the conflicting marker
            const fence = row?.fence;
            const res = row?.res;
            throw new RolledBack({
              kind: "marker",
              fence: fence === null || fence === undefined ? null : Number(fence),
              result: res === null || res === undefined ? undefined : String(res),
            });
          }
          if (!s.get(this.#sql.fenceUpsert, this.#fenceParams(execution))) {
            const row = s.get(this.#sql.read, { pk: fenceKey(execution) });
            throw new RolledBack({ kind: "fence", holder: fenceHolder(text(row?.pos), text(row?.exec)) });
          }
          return { kind: "landed", writes: applyWrites(s, step.writes) };
        });
      } catch (error) {
        if (error instanceof RolledBack) return error.answer;
        throw error;
      }
    });
  }

  async stop(execution: DispatchedExecution): Promise<"stopped" | "stale"> {
    const params = { ...this.#fenceParams(execution, stoppedExec(execution)), own: execution.executionName };
    return this.#run("stop", execution.executionName, (s) =>
      s.get(this.#sql.stop, params) ? "stopped" : "stale",
    );
  }

  /** The fence upsert as the store's commit folds it: a refusal there is reported `stale`, and the commit lands. */
  fenceWrite(execution: DispatchedExecution): SqliteAtomicWrite {
    this.#run("create table", this.table, () => {}); // the store's commit runs it: the table must be there
    return this.store.atomicWrite({
      description: `execution fence of ${execution.subject}`,
      sql: this.#sql.fenceUpsert,
      params: this.#fenceParams(execution),
    });
  }

  async readMarker(key: string): Promise<{ result: string | undefined } | undefined> {
    return this.#run("read", key, (s) => {
      const row = s.get(this.#sql.read, { pk: key });
      return row && { result: row.res === null || row.res === undefined ? undefined : String(row.res) };
    });
  }

  deleteExpired(nowSeconds: number): number {
    return this.#run("deleteExpired", this.table, (s) => s.run(this.#sql.deleteExpired, { now: nowSeconds }));
  }

  /** Runs `body` on the store's statements, the table created first; driver errors become `StoreError`s. */
  #run<T>(op: string, key: string, body: (s: Statements) => T): T {
    try {
      const s = statementsOf(this.store);
      if (!this.#created) {
        for (const ddl of stepTableDdl(this.table)) s.run(ddl, {});
        this.#created = true;
      }
      return body(s);
    } catch (error) {
      throw sqliteError(op, key, error);
    }
  }

  #fenceParams(execution: DispatchedExecution, exec = execution.executionName): SqlParams {
    return { pk: fenceKey(execution), pos: positionOf(execution), exec, subject: execution.subject };
  }
}

const text = (v: unknown) => (v === null || v === undefined ? undefined : String(v));
