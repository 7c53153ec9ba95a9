import { createHash } from "node:crypto";
import type { QueryResult } from "pg";
import type { PostgresClient, PostgresPool } from "./pool.js";

/** Statement names by text: a store sends a handful of statements (inline state: one per set of written columns). */
const STATEMENT_NAMES = new Map<string, string>();
const MAX_NAMES = 1024;

/**
 * Runs a store statement, named when `prepared`: node-postgres then prepares it once per connection and the server
 * parses and plans it once, instead of for every event (the store's statements are long CTEs: measured in
 * bench/postgres-inline.ts). Off by default: a named statement pins the connection behind RDS Proxy and fails behind
 * PgBouncer's transaction pooling before 1.21, where the same connection is not kept for the next statement.
 */
export function runStatement(
  target: PostgresPool | PostgresClient,
  sql: string,
  params: unknown[],
  prepared: boolean,
): Promise<QueryResult> {
  if (!prepared) return target.query(sql, params);
  let name = STATEMENT_NAMES.get(sql);
  if (name === undefined) {
    name = `eonce_${createHash("sha1").update(sql).digest("hex").slice(0, 20)}`;
    if (STATEMENT_NAMES.size >= MAX_NAMES) STATEMENT_NAMES.clear();
    STATEMENT_NAMES.set(sql, name);
  }
  return target.query({ name, text: sql, values: params });
}
