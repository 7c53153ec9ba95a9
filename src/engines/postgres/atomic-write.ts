import type { AtomicWrite, WriteOutcome } from "../../core/store.js";
import type { PostgresClient } from "./pool.js";

/**
 * A SQL statement the Postgres store runs in its commit's transaction, after the state update: effect and commit
 * land together or not at all. It runs on the store's pool, so it must address the store's database. A statement
 * that changes no row (a fenced upsert whose condition refused it) is reported `stale`; the commit still lands.
 */
export interface PostgresAtomicWrite extends AtomicWrite {
  readonly engine: "postgres";
  readonly sql: string;
  readonly params: readonly unknown[];
}

/** Whether `write` is a statement the PostgreSQL store can run in its commit's transaction. */
export function isPostgresAtomicWrite(write: AtomicWrite): write is PostgresAtomicWrite {
  return write.engine === "postgres" && typeof (write as PostgresAtomicWrite).sql === "string";
}

/** Any statement as an effect of the commit (e.g. an INSERT of a charge row); `description` names it in outcomes. */
export function postgresWrite(
  sql: string,
  params: readonly unknown[] = [],
  description = sql.slice(0, 60),
): PostgresAtomicWrite {
  return { engine: "postgres", description, sql, params };
}

/** Runs `writes` in the client's open transaction: one that changes no row (its own condition refused it) is `stale`. */
export async function applyWrites(
  client: PostgresClient,
  writes: readonly Pick<PostgresAtomicWrite, "description" | "sql" | "params">[],
): Promise<WriteOutcome[]> {
  const outcomes: WriteOutcome[] = [];
  for (const w of writes) {
    const r = await client.query(w.sql, [...w.params]);
    outcomes.push({ description: w.description, status: (r.rowCount ?? 0) > 0 ? "applied" : "stale" });
  }
  return outcomes;
}
