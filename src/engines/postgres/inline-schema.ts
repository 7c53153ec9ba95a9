import { OptionsError } from "../../core/errors.js";
import { boolean, required, schemaFor } from "../../core/options.js";
import { type InlineFunction, inlineFunctions } from "./inline-functions.js";
import { INLINE_COLUMN_NAMES, INLINE_COLUMNS, InlineStatements } from "./inline-sql.js";
import { lockTimeoutField, migrationOptions, type Queryable, runMigration } from "./migration.js";
import type { PostgresPool } from "./pool.js";
import { DEFAULT_SCHEMA, identifier, migrateOutboxTable, outboxTableName, qualified } from "./schema.js";

/** The options of `migrateInline`: your table and its key column. */
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
  /**
   * Also creates the server functions `InlinePostgresStore` calls (its `serverFunctions`, inline-functions.ts), one
   * per step, in the table's schema; creating them takes no lock on the table but needs CREATE on the schema.
   * Default true. False: the state columns only.
   */
  serverFunctions?: boolean;
  /** Also creates the outbox table (`PostgresOutbox` with engine `postgres-inline`) when missing. Default false. */
  outbox?: boolean;
  /** The outbox table. Default `<table>_outbox`. */
  outboxTable?: string;
}

const MIGRATE_INLINE_OPTIONS = schemaFor<InlineTableOptions>()({
  schema: identifier(DEFAULT_SCHEMA),
  table: required(identifier()),
  keyColumn: identifier("pk"),
  lockTimeoutMs: lockTimeoutField,
  serverFunctions: boolean({ default: true }),
  outbox: boolean({ default: false }),
  outboxTable: identifier(),
});

const columnPart = (column: string) => `column ${column}`;
const functionPart = (f: InlineFunction) => `function ${f.name}`;
/** A function of this name made for another type of the key column: dropped and made again. */
const retypedPart = (f: InlineFunction) => `function ${f.name} (made for another key type)`;

/**
 * Adds the state columns (`eo_*`, inline-sql.ts) to the user's table and creates the store's server functions
 * (inline-functions.ts), if missing: safe on every cold start and in a deploy step. With everything there it reads the
 * catalog (one statement) and takes no lock; otherwise concurrent calls are serialised and the wait for the table's
 * lock ends after `lockTimeoutMs` (migration.ts). All columns are nullable (a row without state holds none), so
 * adding them rewrites no row. A function is named by a hash of its definition: a version of this package whose
 * functions differ creates its own beside the older ones, which the older version's stores go on calling. Checks that the key column is unique on its own,
 * which the store's `ON CONFLICT` needs: without it every claim of a new row would fail. Inline rows are the user's:
 * nothing here deletes them (the state's expiry, `eo_exp`, is informational).
 */
export async function migrateInline(pool: PostgresPool, options: InlineTableOptions): Promise<void> {
  const o = migrationOptions("migrateInline", MIGRATE_INLINE_OPTIONS, options);
  const table = qualified(o.schema, o.table);
  const outboxTable = o.outbox ? outboxTableName("migrateInline", o.table, o.outboxTable) : undefined;
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
  const functions = o.serverFunctions
    ? Object.values(inlineFunctions(o.schema, o.table, new InlineStatements(table, o.keyColumn)))
    : [];
  await runMigration(pool, {
    what: "migrateInline",
    schema: o.schema,
    table,
    lockTimeoutMs: o.lockTimeoutMs,
    missing: (db) => missingParts(db, { ...o, functions }),
    addMissing: async (db, missing) => {
      const add = INLINE_COLUMN_NAMES.filter((c) => missing.includes(columnPart(c)));
      if (add.length > 0)
        await db.query(
          `ALTER TABLE ${table} ${add.map((c) => `ADD COLUMN IF NOT EXISTS ${c} ${INLINE_COLUMNS[c]}`).join(", ")}`,
        );
      for (const f of functions) {
        if (missing.includes(retypedPart(f))) await db.query(`DROP FUNCTION ${qualified(o.schema, f.name)}`);
        if (missing.includes(functionPart(f)) || missing.includes(retypedPart(f)))
          await db.query(f.definition);
      }
    },
  });
  if (outboxTable !== undefined) {
    const { schema, lockTimeoutMs } = o;
    await migrateOutboxTable(pool, { what: "migrateInline", schema, table: outboxTable, lockTimeoutMs });
  }
}

/** Where a table's inline parts are looked up: its schema and name (unquoted), its key column, its functions. */
interface InlineParts {
  schema: string;
  table: string;
  keyColumn: string;
  functions: readonly InlineFunction[];
}

/**
 * The state columns the table lacks and the functions the schema lacks (or holds for another type of the key
 * column, which is their first parameter's).
 */
async function missingParts(db: Queryable, o: InlineParts): Promise<string[]> {
  const found = await inlineCatalog(db, o);
  const columns = INLINE_COLUMN_NAMES.filter((c) => !found.columns.includes(c)).map(columnPart);
  const functions = o.functions
    .filter((f) => !found.fitting.includes(f.name))
    .map((f) => (found.functions.includes(f.name) ? retypedPart(f) : functionPart(f)));
  return [...columns, ...functions];
}

/**
 * Whether `fn` is installed for the table's key column as it is now (made for its type): a call of a function that
 * does not fit fails or answers `NOT_SERVED` (inline-functions.ts), and the store runs the statement instead.
 */
export async function functionFits(
  db: Queryable,
  o: Omit<InlineParts, "functions">,
  fn: InlineFunction,
): Promise<boolean> {
  return (await inlineCatalog(db, { ...o, functions: [fn] })).fitting.includes(fn.name);
}

/**
 * The table's state columns and the schema's functions among `o.functions`: all of them, and those whose first
 * parameter has the key column's type (`fitting`). One read of the catalog tables: no lock on the table, and a new
 * snapshot per statement.
 */
async function inlineCatalog(
  db: Queryable,
  o: InlineParts,
): Promise<Record<"columns" | "functions" | "fitting", string[]>> {
  const out = await db.query(
    `SELECT
  ARRAY(SELECT a.attname::text FROM pg_attribute a
    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attname = ANY($3)) AS columns,
  ARRAY(SELECT p.proname::text FROM pg_proc p WHERE p.pronamespace = n.oid AND p.proname = ANY($4)) AS functions,
  ARRAY(SELECT p.proname::text FROM pg_proc p
    WHERE p.pronamespace = n.oid AND p.proname = ANY($4) AND p.proargtypes[0] = k.atttypid) AS fitting
FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid
  LEFT JOIN pg_attribute k ON k.attrelid = c.oid AND k.attname = $5 AND k.attnum > 0 AND NOT k.attisdropped
WHERE n.nspname = $1 AND c.relname = $2`,
    [o.schema, o.table, INLINE_COLUMN_NAMES, o.functions.map((f) => f.name), o.keyColumn],
  );
  const found = (out.rows[0] ?? {}) as Partial<Record<"columns" | "functions" | "fitting", string[]>>;
  return { columns: found.columns ?? [], functions: found.functions ?? [], fitting: found.fitting ?? [] };
}
