import type { StateRecord } from "../../core/state.js";
import { type ForgetResult, fenceAt, type StateAdmin, type StateQuery } from "../../core/state-admin.js";
import { postgresStoreError } from "./errors.js";
import type { PostgresPool } from "./schema.js";
import { toRecord } from "./sql.js";
import { PostgresStore, type PostgresStoreOptions } from "./store.js";

/** Every column but the stored result, which a listing does not need. */
const LISTED = `state_key, status, position, identity, fence, token, lease_until_ms, committed_position,
  committed_identity, result_omitted_bytes, committed_fingerprint, attempts, expires_at`;

/** The admin order (src/core/state-admin.ts adminRank) in SQL: $1 now (ms). */
const RANK = `CASE WHEN status = 'running' AND COALESCE(lease_until_ms, 0) <= $1 THEN 0
  WHEN status = 'running' THEN 1 WHEN status = 'released' THEN 2 ELSE 3 END`;

/**
 * The operator's view of a PostgreSQL state table (src/core/state-admin.ts). `list` is one SELECT that filters,
 * orders and limits on the server (a sequential scan: the table has no index for it, and an operator's query
 * needs none). `forget` is one statement that locks the row, deletes it unless a live lease holds it, and returns
 * the row either way, as the store's steps do (sql.ts). `close` ends the pool it was given.
 */
export class PostgresStateAdmin implements StateAdmin {
  readonly engine = "postgres";
  readonly store: PostgresStore;
  readonly #pool: PostgresPool & { end?: () => Promise<void> };

  constructor(options: PostgresStoreOptions) {
    this.store = new PostgresStore(options);
    this.#pool = options.pool;
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const table = this.store.tableName;
    try {
      const out = await this.#pool.query(
        `SELECT ${LISTED} FROM ${table}
WHERE ($2::text IS NULL OR status = $2) AND ($3::bigint IS NULL OR fence < $3)
ORDER BY ${RANK}, fence, state_key COLLATE "C" LIMIT $4`,
        [
          query.nowMs,
          query.status ?? null,
          query.claimedBeforeMs === undefined ? null : fenceAt(query.claimedBeforeMs),
          query.limit,
        ],
      );
      return out.rows.map(toRecord);
    } catch (error) {
      throw postgresStoreError("list", table, error);
    }
  }

  async forget(key: string, nowMs: number): Promise<ForgetResult> {
    const table = this.store.tableName;
    try {
      const out = await this.#pool.query(
        `WITH old AS (SELECT * FROM ${table} WHERE state_key = $1 FOR UPDATE),
del AS (
  DELETE FROM ${table} AS t USING old WHERE t.state_key = old.state_key
    AND NOT (old.status = 'running' AND COALESCE(old.lease_until_ms, 0) > $2)
  RETURNING 1
)
SELECT (SELECT count(*) FROM del) AS landed, old.* FROM (SELECT 1) AS one LEFT JOIN old ON true`,
        [key, nowMs],
      );
      const row = out.rows[0] as Record<string, unknown> | undefined;
      if (!row || row.state_key == null) return { forgotten: false };
      const state = toRecord(row);
      return Number(row.landed) > 0 ? { forgotten: true, state } : { forgotten: false, state };
    } catch (error) {
      throw postgresStoreError("forget", key, error);
    }
  }

  async close(): Promise<void> {
    await this.#pool.end?.();
  }
}
