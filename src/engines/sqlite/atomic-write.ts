import type { AtomicWrite, WriteOutcome } from "../../core/store.js";
import type { SqlParams, Statements } from "./connection.js";

/**
 * One SQL statement the SQLite store runs inside its commit's transaction, on its own database. It must end in
 * `RETURNING …`: a row back means it applied; none means its own condition refused it (reported `stale`, and the
 * commit lands all the same). Build it with `SqliteStore.atomicWrite` or `SqliteFencedSink.atomicPut`.
 */
export interface SqliteAtomicWrite extends AtomicWrite {
  readonly engine: "sqlite";
  /** The store whose database the statement runs on: a store folds only its own. */
  readonly store: object;
  readonly sql: string;
  readonly params: SqlParams;
}

/** Whether `write` is a statement the SQLite store can run in its commit's transaction. */
export function isSqliteAtomicWrite(write: AtomicWrite): write is SqliteAtomicWrite {
  const w = write as SqliteAtomicWrite;
  return w.engine === "sqlite" && typeof w.sql === "string" && typeof w.store === "object";
}

/** Runs `writes` in the open transaction of `statements`: a row back is `applied`, none `stale` (its own condition). */
export function applyWrites(statements: Statements, writes: readonly SqliteAtomicWrite[]): WriteOutcome[] {
  return writes.map((w) => ({
    description: w.description,
    status: statements.get(w.sql, w.params) ? "applied" : "stale",
  }));
}
