import { OptionsError } from "../../core/errors.js";
import { required, schemaFor } from "../../core/options.js";
import { INLINE_COLUMN_NAMES, INLINE_COLUMNS } from "./inline-sql.js";
import { lockTimeoutField, migrationOptions, type Queryable, runMigration } from "./migration.js";
import type { PostgresPool } from "./pool.js";
import { DEFAULT_SCHEMA, identifier, qualified } from "./schema.js";

export interface InlineTableOptions {
  /** Default `public`. */
  schema?: string;
  /** The user's table; it must exist. */
  table: string;
  /** Its primary key (or unique) column, as `InlinePostgresStore`'s `keyColumn`. Default `pk`. */
  keyColumn?: string;
  /**
   * When columns are missing: how long the migration waits for the table's lock (ACCESS EXCLUSIVE, for `ALTER TABLE`)
   * before it fails with MigrationLockTimeoutError, nothing changed. Default 3000 ms. Nothing missing: no lock.
   */
  lockTimeoutMs?: number;
}

const MIGRATE_INLINE_OPTIONS = schemaFor<InlineTableOptions>()({
  schema: identifier(DEFAULT_SCHEMA),
  table: required(identifier()),
  keyColumn: identifier("pk"),
  lockTimeoutMs: lockTimeoutField,
});

const columnPart = (column: string) => `column ${column}`;

/**
 * Adds the state columns (`eo_*`, inline-sql.ts) to the user's table, if missing: safe on every cold start and in a
 * deploy step. With every column there it reads the catalog and takes no lock; otherwise concurrent calls are
 * serialised and the wait for the table's lock ends after `lockTimeoutMs` (migration.ts). All columns are nullable
 * (a row without state holds none), so adding them rewrites no row. Checks that the key column is unique on its own,
 * which the store's `ON CONFLICT` needs: without it every claim of a new row would fail. Inline rows are the user's:
 * nothing here deletes them (the state's expiry, `eo_exp`, is informational).
 */
export async function migrateInline(pool: PostgresPool, options: InlineTableOptions): Promise<void> {
  const o = migrationOptions("migrateInline", MIGRATE_INLINE_OPTIONS, options);
  const table = qualified(o.schema, o.table);
  const unique = await pool.query(
    `SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
     WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
       AND a.attname = $2`,
    [table, o.keyColumn],
  );
  if (unique.rows.length === 0) {
    throw new OptionsError(
      `migrateInline: ${table} needs a primary key or unique index on "${o.keyColumn}" alone (the table must exist)`,
    );
  }
  await runMigration(pool, {
    what: "migrateInline",
    schema: o.schema,
    table,
    lockTimeoutMs: o.lockTimeoutMs,
    missing: (db) => missingColumns(db, o.schema, o.table),
    apply: async (db, missing) => {
      const add = INLINE_COLUMN_NAMES.filter((c) => missing.includes(columnPart(c)));
      await db.query(
        `ALTER TABLE ${table} ${add.map((c) => `ADD COLUMN IF NOT EXISTS ${c} ${INLINE_COLUMNS[c]}`).join(", ")}`,
      );
    },
  });
}

/** The state columns the table lacks, from the catalog tables (no lock on the table; a new snapshot per statement). */
async function missingColumns(db: Queryable, schema: string, table: string): Promise<string[]> {
  const out = await db.query(
    `SELECT a.attname FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped AND a.attname = ANY($3)`,
    [schema, table, INLINE_COLUMN_NAMES],
  );
  const present = new Set(out.rows.map((r: { attname: string }) => r.attname));
  return INLINE_COLUMN_NAMES.filter((c) => !present.has(c)).map(columnPart);
}
