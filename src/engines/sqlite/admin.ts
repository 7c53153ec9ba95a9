import { StoreError } from "../../core/errors.js";
import type { StateRecord } from "../../core/state.js";
import {
  claimedBeforeFence,
  type ForgetOptions,
  type ForgetResult,
  forgetRefused,
  resolveForgetOptions,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import { sqliteError } from "./connection.js";
import { toRecord } from "./schema.js";
import { SqliteStore, type SqliteStoreOptions, statementsOf } from "./store.js";

/** The admin order (src/core/state-admin.ts adminRank) in SQL. */
const RANK = `CASE WHEN status = 'running' AND coalesce(lease_until, 0) <= @now THEN 0
  WHEN status = 'running' THEN 1 WHEN status = 'released' THEN 2 ELSE 3 END`;

/**
 * The operator's view of a SQLite state table (src/core/state-admin.ts), on the store's own connection. `list` is
 * one SELECT that filters, orders and limits; `forget` reads the row and deletes it unless a live lease holds it,
 * in one write transaction (`BEGIN IMMEDIATE`, as every store step), so no claim lands in between. `close` closes
 * the file.
 */
export class SqliteStateAdmin extends StoreAdmin<SqliteStore> {
  constructor(options: SqliteStoreOptions) {
    super(new SqliteStore(options));
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const sql = `SELECT state_key, status, pos, eid, fence, tok, lease_until, cpos, ceid, result_omitted, cfp,
  expires_at, att FROM "${this.store.tableName}"
WHERE (@status IS NULL OR status = @status) AND (@before IS NULL OR fence < @before)
ORDER BY ${RANK}, fence, state_key LIMIT @limit`;
    const params = {
      now: query.nowMs,
      status: query.status ?? null,
      before: claimedBeforeFence(query) ?? null,
      limit: query.limit,
    };
    return this.#step("list", this.store.tableName, () =>
      statementsOf(this.store)
        .connection.prepare(sql)
        .all(params)
        .map((row) => toRecord(row as Record<string, unknown>)),
    );
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const o = resolveForgetOptions(options); // checked before the transaction: a bad option is no store error
    const sql = statementsOf(this.store);
    return this.#step("forget", key, () =>
      sql.immediate((): ForgetResult => {
        const row = sql.get(`SELECT * FROM "${this.store.tableName}" WHERE state_key = @key`, { key });
        if (!row) return { forgotten: false };
        const state = toRecord(row);
        if (forgetRefused(state, o)) return { forgotten: false, state };
        if (sql.run(`DELETE FROM "${this.store.tableName}" WHERE state_key = @key`, { key }) !== 1)
          throw new StoreError(`SqliteStore: ${key} changed inside its own transaction`, {
            retryable: false,
          });
        return { forgotten: true, state };
      }),
    );
  }

  async close(): Promise<void> {
    this.store.close();
  }

  #step<T>(op: string, key: string, body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw sqliteError(op, key, error);
    }
  }
}
