import type { StateRecord } from "../../core/state.js";
import {
  claimedBeforeFence,
  type ForgetOptions,
  type ForgetResult,
  forgetLeaseBoundMs,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import { postgresStoreError } from "./errors.js";
import type { PostgresPool } from "./pool.js";
import { toRecord } from "./sql.js";
import { PostgresStore, type PostgresStoreOptions } from "./store.js";

/** Every column but the stored result, which a listing does not need. */
const LISTED = `state_key, status, position, identity, fence, token, lease_until_ms, committed_position,
  committed_identity, result_omitted_bytes, committed_fingerprint, attempts, expires_at`;

/** The state columns the admin's statements filter and order on: the state table's, or inline state's. */
export interface AdminColumns {
  status: string;
  leaseUntilMs: string;
  fence: string;
  /** The state key, as an expression (inline state derives it from the row's key). */
  stateKey: string;
}

const STATE_TABLE_COLUMNS: AdminColumns = {
  status: "status",
  leaseUntilMs: "lease_until_ms",
  fence: "fence",
  stateKey: "state_key",
};

/**
 * `list`'s statement, filtered, ordered (src/core/state-admin.ts compareForAdmin) and limited on the server:
 * `where` narrows the rows; the parameters are listParams'.
 */
export function listStatement(table: string, selected: string, c: AdminColumns, where = "true"): string {
  const rank = `CASE WHEN ${c.status} = 'running' AND COALESCE(${c.leaseUntilMs}, 0) <= $1 THEN 0
  WHEN ${c.status} = 'running' THEN 1 WHEN ${c.status} = 'released' THEN 2 ELSE 3 END`;
  return `SELECT ${selected} FROM ${table}
WHERE ${where} AND ($2::text IS NULL OR ${c.status} = $2) AND ($3::bigint IS NULL OR ${c.fence} < $3)
ORDER BY ${rank}, ${c.fence}, (${c.stateKey}) COLLATE "C" LIMIT $4`;
}

/** $1 now (ms), $2 status, $3 the fence a claim before `claimedBeforeMs` is below, $4 limit. */
export function listParams(query: StateQuery): unknown[] {
  return [query.nowMs, query.status ?? null, claimedBeforeFence(query) ?? null, query.limit];
}

/**
 * A lease that holds on the locked row `old`: `forget` leaves that row alone. $2 is forgetLeaseBoundMs (core
 * forgetRefused as a bound: the operator's clock less the clock skew grace).
 */
export function liveLeaseCondition(c: AdminColumns): string {
  return `old.${c.status} = 'running' AND COALESCE(old.${c.leaseUntilMs}, 0) > $2`;
}

/**
 * The operator's view of a PostgreSQL state table (src/core/state-admin.ts). `list` is one SELECT that filters,
 * orders and limits on the server (a sequential scan: the table has no index for it, and an operator's query
 * needs none). `forget` is one statement that locks the row, deletes it unless a live lease holds it, and returns
 * the row either way, as the store's steps do (sql.ts). `close` ends the pool it was given.
 */
export class PostgresStateAdmin extends StoreAdmin<PostgresStore> {
  readonly #pool: PostgresPool & { end?: () => Promise<void> };

  constructor(options: PostgresStoreOptions) {
    super(new PostgresStore(options));
    this.#pool = options.pool;
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const table = this.store.tableName;
    try {
      const out = await this.#pool.query(
        listStatement(table, LISTED, STATE_TABLE_COLUMNS),
        listParams(query),
      );
      return out.rows.map(toRecord);
    } catch (error) {
      throw postgresStoreError("list", table, error);
    }
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const table = this.store.tableName;
    const boundMs = forgetLeaseBoundMs(options); // checked before the statement: a bad option is no store error
    try {
      const out = await this.#pool.query(
        `WITH old AS (SELECT * FROM ${table} WHERE state_key = $1 FOR UPDATE),
del AS (
  DELETE FROM ${table} AS t USING old WHERE t.state_key = old.state_key
    AND NOT (${liveLeaseCondition(STATE_TABLE_COLUMNS)})
  RETURNING 1
)
SELECT (SELECT count(*) FROM del) AS landed, old.* FROM (SELECT 1) AS one LEFT JOIN old ON true`,
        [key, boundMs],
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
