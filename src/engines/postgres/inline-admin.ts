import type { StateRecord } from "../../core/state.js";
import {
  compareForAdmin,
  type ForgetOptions,
  type ForgetResult,
  forgetLeaseBoundMs,
  type InlineRowMapping,
  inlineKeyOfRow,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import { type AdminColumns, listParams, listStatement, liveLeaseCondition } from "./admin.js";
import { postgresStoreError } from "./errors.js";
import { INLINE_COLUMN_NAMES, InlineStatements, inlineRecord } from "./inline-sql.js";
import { InlinePostgresStore, type InlinePostgresStoreOptions } from "./inline-store.js";
import type { PostgresPool } from "./pool.js";
import { quote } from "./schema.js";

/** Inline state's admin takes the store's options, and with a custom `rowKey` its inverse for `list`. */
export type InlinePostgresStateAdminOptions = InlinePostgresStoreOptions &
  Pick<InlineRowMapping, "stateKeyOfRow">;

/** The row write's stamp describes the user's columns, not the state: forget keeps it. */
const WRITE_STAMP: readonly string[] = ["eo_wpos", "eo_wfence"];

/** What forgetting a state key clears: the state's columns less the write stamp. */
export const FORGOTTEN_COLUMNS: readonly string[] = INLINE_COLUMN_NAMES.filter(
  (c) => !WRITE_STAMP.includes(c),
);

/** A listing needs neither the stored result nor the write stamp. */
const LISTED = INLINE_COLUMN_NAMES.filter((c) => c !== "eo_res" && !WRITE_STAMP.includes(c)).join(", ");

/**
 * The operator's view of inline state on PostgreSQL (src/core/state-admin.ts): the `eo_*` columns of the user's
 * rows. `list` is one SELECT over the rows that hold state (`eo_fence` set), filtered, ordered and limited on the
 * server as the state table's admin does (admin.ts); the user's columns are not read. `forget` is one statement that
 * locks the row and sets its state columns to NULL unless a live lease holds it, returning the row either way: the
 * row and the user's columns stay, and so does the write stamp (`eo_wpos`, `eo_wfence`), so an older event still
 * cannot replace them. Rows map to state keys by the store's `rowKey` and its inverse (src/core/state-admin.ts
 * inlineKeyOfRow): the default's (`stateKeyOfInlineRow`, src/core/state-key.ts), in SQL too, or a
 * custom `rowKey`'s `stateKeyOfRow`; with a custom `rowKey` and no inverse, `list` names each record by its row.
 * `close` ends the pool it was given.
 */
export class InlinePostgresStateAdmin extends StoreAdmin<InlinePostgresStore> {
  readonly #pool: PostgresPool & { end?: () => Promise<void> };
  readonly #sql: InlineStatements;
  /** The key column as text: row keys are strings, whatever the column's type. */
  readonly #rowKey: string;
  readonly #columns: AdminColumns;
  readonly #keyOfRow: (row: string) => string;
  /** A custom rowKey: its inverse exists only in JavaScript, so the order's last tie-break is redone here. */
  readonly #customRows: boolean;

  constructor(options: InlinePostgresStateAdminOptions) {
    const { stateKeyOfRow: _inverse, ...storeOptions } = options;
    super(new InlinePostgresStore(storeOptions));
    this.#pool = options.pool;
    this.#keyOfRow = inlineKeyOfRow(this.engine, options, (key) => this.store.rowKeyOf(key));
    this.#customRows = options.rowKey !== undefined;
    this.#sql = new InlineStatements(this.store.tableName, this.store.keyColumn);
    const rowKey = `${quote(this.store.keyColumn)}::text`;
    this.#rowKey = rowKey;
    this.#columns = {
      status: "eo_st",
      leaseUntilMs: "eo_lease",
      fence: "eo_fence",
      // stateKeyOfInlineRow in SQL, so that rows order as their state keys do (a custom mapping: by row).
      stateKey: this.#customRows ? rowKey : stateKeyOfInlineRowSql(rowKey),
    };
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const table = this.store.tableName;
    const selected = `${this.#rowKey} AS row_key, ${LISTED}`;
    let rows: Record<string, unknown>[];
    try {
      const out = await this.#pool.query(
        listStatement(table, selected, this.#columns, "eo_fence IS NOT NULL"),
        listParams(query),
      );
      rows = out.rows;
    } catch (error) {
      throw postgresStoreError("list", table, error);
    }
    const records = rows.map((row) => inlineRecord(this.#keyOfRow(String(row.row_key)), row) as StateRecord);
    // Ties of one fence at the limit may differ from the key order (rare: fences come from a microsecond clock).
    return this.#customRows ? records.sort((a, b) => compareForAdmin(a, b, query.nowMs)) : records;
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const table = this.store.tableName;
    const boundMs = forgetLeaseBoundMs(options); // checked before the statement: a bad option is no store error
    const cleared = FORGOTTEN_COLUMNS.map((c) => `${c} = NULL`);
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
