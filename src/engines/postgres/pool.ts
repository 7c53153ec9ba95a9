import type { Pool, PoolClient } from "pg";

/** What the store, the sink and `migrate` run statements on: a `pg.Pool` (transactions take one of its clients). */
export interface PostgresPool {
  /** Runs one statement on a pooled client. */
  query: Pool["query"];
  /** Takes a client of the pool, for a transaction; `release` gives it back. */
  connect(): Promise<PostgresClient>;
}
/** A client taken from the pool: statements, then `release`. */
export type PostgresClient = Pick<PoolClient, "query" | "release">;
