import { OptionsError } from "../../core/errors.js";
import { INLINE_COLUMN_NAMES, INLINE_COLUMNS } from "./inline-sql.js";
import { DEFAULT_SCHEMA, type PostgresPool, qualified, quote } from "./schema.js";

export interface InlineTableOptions {
  /** Default `public`. */
  schema?: string;
  /** The user's table; it must exist. */
  table: string;
  /** Its primary key (or unique) column, as `InlinePostgresStore`'s `keyColumn`. Default `pk`. */
  keyColumn?: string;
}

/**
 * Adds the state columns (`eo_*`, inline-sql.ts) to the user's table, if missing: idempotent, safe on every cold
 * start and in a deploy step. All are nullable (a row without state holds none), so adding them rewrites no row.
 * Checks that the key column is unique on its own, which the store's `ON CONFLICT` needs: without it every claim
 * of a new row would fail. Inline rows are the user's: nothing here deletes them (the state's expiry, `eo_exp`, is
 * informational).
 */
export async function migrateInline(pool: PostgresPool, options: InlineTableOptions): Promise<void> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const keyColumn = options.keyColumn ?? "pk";
  const table = qualified(schema, options.table);
  quote(keyColumn);
  const unique = await pool.query(
    `SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
     WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
       AND a.attname = $2`,
    [table, keyColumn],
  );
  if (unique.rows.length === 0) {
    throw new OptionsError(
      `migrateInline: ${table} needs a primary key or unique index on "${keyColumn}" alone (the table must exist)`,
    );
  }
  const columns = INLINE_COLUMN_NAMES.map((c) => `ADD COLUMN IF NOT EXISTS ${c} ${INLINE_COLUMNS[c]}`);
  await pool.query(`ALTER TABLE ${table} ${columns.join(", ")}`);
}
