import type { StateRecord } from "../../core/state.js";
import {
  type ForgetOptions,
  type ForgetResult,
  forgetLeaseBoundMs,
  type StateAdmin,
  type StateQuery,
} from "../../core/state-admin.js";
import { stateKeyOfInlineRow } from "../../core/state-key.js";
import { type AdminColumns, listParams, listStatement, liveLeaseCondition } from "./admin.js";
import { postgresStoreError } from "./errors.js";
import { InlinePostgresStore, type InlinePostgresStoreOptions } from "./inline.js";
import { INLINE_COLUMN_NAMES, InlineStatements, inlineRecord } from "./inline-sql.js";
import { type PostgresPool, quote } from "./schema.js";

/** Inline state's admin takes the store's options but its default row mapping (it must map rows back to keys). */
export type InlinePostgresStateAdminOptions = Omit<InlinePostgresStoreOptions, "rowKey">;

/** The row write's stamp describes the user's columns, not the state: forget keeps it. */
const WRITE_STAMP: readonly string[] = ["eo_wpos", "eo_wfence"];

/** A listing needs neither the stored result nor the write stamp. */
const LISTED = INLINE_COLUMN_NAMES.filter((c) => c !== "eo_res" && !WRITE_STAMP.includes(c)).join(", ");

/**
 * The operator's view of inline state on PostgreSQL (src/core/state-admin.ts): the `eo_*` columns of the user's
 * rows. `list` is one SELECT over the rows that hold state (`eo_fence` set), filtered, ordered and limited on the
 * server as the state table's admin does (admin.ts); the user's columns are not read. `forget` is one statement that
 * locks the row and sets its state columns to NULL unless a live lease holds it, returning the row either way: the
 * row and the user's columns stay, and so does the write stamp (`eo_wpos`, `eo_wfence`), so an older event still
 * cannot replace them. Rows map to state keys by the store's default (`<subject>` ↔ `o#<subject>`; `u#…` rows are
 * their own key). `close` ends the pool it was given.
 */
export class InlinePostgresStateAdmin implements StateAdmin {
  readonly engine = "postgres-inline";
  readonly store: InlinePostgresStore;
  readonly #pool: PostgresPool & { end?: () => Promise<void> };
  readonly #sql: InlineStatements;
  /** The key column as text: row keys are strings, whatever the column's type. */
  readonly #rowKey: string;
  readonly #columns: AdminColumns;

  constructor(options: InlinePostgresStateAdminOptions) {
    this.store = new InlinePostgresStore(options);
    this.#pool = options.pool;
    this.#sql = new InlineStatements(this.store.tableName, this.store.keyColumn);
    const rowKey = `${quote(this.store.keyColumn)}::text`;
    this.#rowKey = rowKey;
    this.#columns = {
      status: "eo_st",
      leaseUntilMs: "eo_lease",
      fence: "eo_fence",
      // stateKeyOfInlineRow in SQL, so that rows order as their state keys do.
      stateKey: stateKeyOfInlineRowSql(rowKey),
    };
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const table = this.store.tableName;
    const selected = `${this.#rowKey} AS row_key, ${LISTED}`;
    try {
      const out = await this.#pool.query(
        listStatement(table, selected, this.#columns, "eo_fence IS NOT NULL"),
        listParams(query),
      );
      return out.rows.map((row) => inlineRecord(stateKeyOfInlineRow(row.row_key), row) as StateRecord);
    } catch (error) {
      throw postgresStoreError("list", table, error);
    }
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const table = this.store.tableName;
    const boundMs = forgetLeaseBoundMs(options); // checked before the statement: a bad option is no store error
    const cleared = INLINE_COLUMN_NAMES.filter((c) => !WRITE_STAMP.includes(c)).map((c) => `${c} = NULL`);
    try {
      const out = await this.#pool.query(
        `WITH old AS (${this.#sql.read()} FOR UPDATE),
upd AS (
  UPDATE ${table} AS t SET ${cleared.join(", ")}
  FROM old WHERE t.${quote(this.store.keyColumn)} = old.row_key
    AND old.eo_fence IS NOT NULL AND NOT (${liveLeaseCondition(this.#columns)})
  RETURNING 1
)
SELECT (SELECT count(*) FROM upd) AS landed, old.* FROM (SELECT 1) AS one LEFT JOIN old ON true`,
        [this.store.rowKeyOf(key), boundMs],
      );
      const row = out.rows[0] as Record<string, unknown> | undefined;
      const state = inlineRecord(key, row);
      if (!state) return { forgotten: false };
      return Number(row?.landed) > 0 ? { forgotten: true, state } : { forgotten: false, state };
    } catch (error) {
      throw postgresStoreError("forget", key, error);
    }
  }

  async close(): Promise<void> {
    await this.#pool.end?.();
  }
}

/** stateKeyOfInlineRow (src/core/state-key.ts) in SQL, over a text expression `row`. */
export function stateKeyOfInlineRowSql(row: string): string {
  return `CASE WHEN left(${row}, 4) = 'u#o#' THEN 'o#u#' || substr(${row}, 5) WHEN left(${row}, 2) = 'u#' THEN ${row} ELSE 'o#' || ${row} END`;
}
