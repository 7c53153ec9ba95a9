import type { Pool, PoolClient } from "pg";

/** What the store, the sink and `migrate` run statements on: a `pg.Pool` (transactions take one of its clients). */
export interface PostgresPool {
  query: Pool["query"];
  connect(): Promise<PostgresClient>;
}
export type PostgresClient = Pick<PoolClient, "query" | "release">;
