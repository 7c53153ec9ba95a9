import { OptionsError } from "../../core/errors.js";
import { boolean, custom, type Field, required, schemaFor, string } from "../../core/options.js";
import { lockTimeoutField, migrationOptions, type Queryable, runMigration } from "./migration.js";
import type { PostgresPool } from "./pool.js";

export const DEFAULT_SCHEMA = "public";
export const DEFAULT_STATE_TABLE = "eonce_state";

/** Names are always quoted, so only plain identifiers are accepted: nothing in them needs escaping. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

const EXPECTED_IDENTIFIER = "a plain SQL identifier (letters, digits, _)";

/** A schema, table or column name option; with a default it always resolves. */
export function identifier(): Field<string, false>;
export function identifier(defaultName: string): Field<string, true>;
export function identifier(defaultName?: string): Field<string, boolean> {
  return defaultName === undefined
    ? string({ pattern: IDENTIFIER, expected: EXPECTED_IDENTIFIER })
    : string({ default: defaultName, pattern: IDENTIFIER, expected: EXPECTED_IDENTIFIER });
}

/** `"schema"."name"`, for names checked by `identifier`. */
export function qualified(schema: string, name: string): string {
  return `${quote(schema)}.${quote(name)}`;
}

export function quote(name: string): string {
  if (!IDENTIFIER.test(name)) throw new OptionsError(`not a plain SQL identifier: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/** Where the state table is: schema and table name. */
export interface PostgresTableOptions {
  /** Default `public`; created if missing. */
  schema?: string;
  /** Default `eonce_state`. */
  table?: string;
}

/**
 * The state table: one row per state key, the StateRecord of src/core/state.ts column for column. Positions compare
 * byte-wise (`COLLATE "C"`), as JavaScript compares the ASCII positions the guard accepts; the database's default
 * collation might not. Numbers that hold clock values (fence: microseconds; lease: milliseconds) are bigint.
 */
function stateTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  state_key text PRIMARY KEY,                      -- the guard's state key (subject, or event for unordered ones)
  status text NOT NULL CHECK (status IN ('running', 'done', 'released')),
  position text COLLATE "C" NOT NULL,              -- position of the current or last claim
  identity text NOT NULL,                          -- identity of the current or last claim
  fence bigint NOT NULL,                           -- strictly increasing per key: the claim condition's fence < $fence
  token text,                                      -- the claiming guard call's token: a retried claim knows its own
  lease_until_ms bigint,                           -- epoch ms, while running
  committed_position text COLLATE "C",             -- last committed event: claims must be newer
  committed_identity text,
  result text,                                     -- JSON of the committed result, replayed to duplicates
  result_omitted_bytes bigint,                     -- the result was too large to keep: its size
  committed_fingerprint text,                      -- payload fingerprint of the committed event (opt-in)
  attempts integer NOT NULL DEFAULT 0,             -- consecutive claims of the current identity
  expires_at bigint                                -- epoch seconds after which deleteExpired may remove the row
)`;
}

/**
 * The outbox table (src/engines/postgres/outbox.ts): one row per published message of a committed event, until a
 * relay has sent it (and after: `sent_at_ms` marks it; `PostgresOutbox.deleteSent` removes old ones). The index serves
 * the claim: the unsent entries of a subject in order, so "is there an older unsent entry" is one index probe.
 */
function outboxTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  message_id text PRIMARY KEY,                     -- eo1_…: fixed at the commit, sent with every copy of the message
  subject text NOT NULL,                           -- the publishing event's subject: its entries are sent in order
  order_key text COLLATE "C" NOT NULL,             -- the commit's fence and the message's index: string order is commit order
  destination text NOT NULL,                       -- JSON of the Destination
  body text NOT NULL,
  group_id text NOT NULL,                          -- FIFO destinations' message group
  attributes text,                                 -- JSON of the message attributes, or NULL
  created_at_ms bigint NOT NULL,                   -- epoch ms of the commit
  lease_owner text,                                -- the relay that claimed it last
  lease_until_ms bigint NOT NULL DEFAULT 0,        -- epoch ms its claim ends; 0: never claimed
  sent_at_ms bigint                                -- epoch ms a relay marked it sent; NULL while pending
)`;
}

/** The longest table name PostgreSQL keeps (NAMEDATALEN - 1). */
const MAX_IDENTIFIER_LENGTH = 63;

/** The outbox table's name: `table` if given, else `<stateTable>_outbox`, which must still be an identifier. */
export function outboxTableName(
  what: string,
  stateTable: string,
  table: string | undefined,
  option = "outboxTable",
): string {
  if (table !== undefined) return table;
  const name = `${stateTable}_outbox`;
  if (name.length > MAX_IDENTIFIER_LENGTH)
    throw new OptionsError(
      `${what}: the outbox table's default name ${name} is longer than ${MAX_IDENTIFIER_LENGTH} characters; set ${option}`,
    );
  return name;
}

/** Creates the outbox table and its index when missing, as `migrate` does the state table (decision 0006). */
export async function migrateOutboxTable(
  pool: PostgresPool,
  o: { what: string; schema: string; table: string; lockTimeoutMs: number },
): Promise<void> {
  await migrateTable(pool, {
    what: o.what,
    schema: o.schema,
    tableName: o.table,
    lockTimeoutMs: o.lockTimeoutMs,
    ddl: outboxTableDdl,
    index: { suffix: "unsent", on: "unsent entries (subject, order_key)" },
    indexDdl: (table, index) =>
      `CREATE INDEX IF NOT EXISTS ${quote(index)} ON ${table} (subject, order_key) WHERE sent_at_ms IS NULL`,
  });
}

/** The options of `migrate`. */
export interface MigrateOptions extends PostgresTableOptions {
  /**
   * When something is missing: how long the migration waits for a lock (the table's, or another migration's of the
   * schema) before it fails with MigrationLockTimeoutError, nothing changed. Default 3000 ms. Statements on the table
   * queued behind the migration's lock request wait at most that long. Nothing missing: no lock is taken.
   */
  lockTimeoutMs?: number;
  /** Also creates the outbox table (`PostgresOutbox`, for `ctx.publish`) when missing. Default false. */
  outbox?: boolean;
  /** The outbox table. Default `<table>_outbox`. */
  outboxTable?: string;
}

const MIGRATE_OPTIONS = schemaFor<MigrateOptions>()({
  schema: identifier(DEFAULT_SCHEMA),
  table: identifier(DEFAULT_STATE_TABLE),
  lockTimeoutMs: lockTimeoutField,
  outbox: boolean({ default: false }),
  outboxTable: identifier(),
});

/**
 * Creates the schema, the state table and its index, and adds the columns added since the table was created, when
 * missing (and, with `outbox`, the outbox table and its index). Safe on every cold start and in a deploy step: with nothing missing it reads the catalog and takes no lock;
 * otherwise concurrent calls are serialised, and lock waits end after `lockTimeoutMs` (migration.ts).
 * Postgres has no TTL: run `deleteExpired` from a schedule to keep the table small.
 */
export async function migrate(pool: PostgresPool, options: MigrateOptions = {}): Promise<void> {
  const o = migrationOptions("migrate", MIGRATE_OPTIONS, options);
  const outboxTable = o.outbox ? outboxTableName("migrate", o.table, o.outboxTable) : undefined;
  await migrateTable(pool, {
    ...o,
    what: "migrate",
    tableName: o.table,
    ddl: stateTableDdl,
    indexDdl: (table, index) => `CREATE INDEX IF NOT EXISTS ${quote(index)} ON ${table} (expires_at)`,
    addedColumns: { committed_fingerprint: "text" },
  });
  if (outboxTable !== undefined) {
    const { schema, lockTimeoutMs } = o;
    await migrateOutboxTable(pool, { what: "migrate", schema, table: outboxTable, lockTimeoutMs });
  }
}

/** A table of this engine with one index (by default on `expires_at`): what `migrateTable` creates or completes. */
export interface TableMigration {
  /** `migrate`, …, for messages. */
  what: string;
  schema: string;
  tableName: string;
  lockTimeoutMs: number;
  /** `CREATE TABLE IF NOT EXISTS` of the quoted, qualified table (its current version, added columns included). */
  ddl(table: string): string;
  /** `CREATE INDEX IF NOT EXISTS` of index `index` (quote it) on the table's `expires_at` (or `index.on`). */
  indexDdl(table: string, index: string): string;
  /** The index's name suffix and what it is on, for messages. Default `expires_at` (the expiry column). */
  index?: { suffix: string; on: string };
  /** Columns added since the table's first version, by name, with their type: added to an older table. */
  addedColumns?: Readonly<Record<string, string>>;
}

/**
 * Creates the schema, the table and its index, and adds `addedColumns`, when missing: what is missing is read from
 * the catalog tables themselves (they take no lock on the table, and each statement reads them under a new snapshot,
 * so a read after the advisory lock sees what the last holder committed), then `runMigration` (migration.ts).
 */
export async function migrateTable(pool: PostgresPool, t: TableMigration): Promise<void> {
  const table = qualified(t.schema, t.tableName);
  const { suffix, on } = t.index ?? { suffix: "expires_at", on: "expires_at" };
  const index = `${t.tableName.slice(0, 50)}_${suffix}`;
  const columns = Object.keys(t.addedColumns ?? {});
  const parts = { schema: "the schema", table: "the table", index: `the index on ${on}` };
  const missing = async (db: Queryable): Promise<string[]> => {
    const out = await db.query(
      `SELECT n.oid IS NOT NULL AS has_schema, c.oid IS NOT NULL AS has_table,
  EXISTS (SELECT 1 FROM pg_class i WHERE i.relnamespace = n.oid AND i.relname = $3) AS has_index,
  ARRAY(SELECT a.attname::text FROM pg_attribute a
    WHERE a.attrelid = c.oid AND a.attname = ANY($4::text[]) AND NOT a.attisdropped) AS columns
FROM (SELECT 1) AS one
LEFT JOIN pg_namespace n ON n.nspname = $1
LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = $2`,
      [t.schema, t.tableName, index, columns],
    );
    const row = out.rows[0] as {
      has_schema: boolean;
      has_table: boolean;
      has_index: boolean;
      columns: string[];
    };
    return [
      ...(row.has_schema ? [] : [parts.schema]),
      ...(row.has_table ? [] : [parts.table]),
      ...(row.has_table ? columns.filter((c) => !row.columns.includes(c)).map((c) => `column ${c}`) : []),
      ...(row.has_index ? [] : [parts.index]),
    ];
  };
  await runMigration(pool, {
    what: t.what,
    schema: t.schema,
    table,
    lockTimeoutMs: t.lockTimeoutMs,
    missing,
    addMissing: async (db, gaps) => {
      if (gaps.includes(parts.schema)) await db.query(`CREATE SCHEMA IF NOT EXISTS ${quote(t.schema)}`);
      if (gaps.includes(parts.table)) await db.query(t.ddl(table));
      for (const c of columns) {
        if (gaps.includes(`column ${c}`))
          await db.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${quote(c)} ${t.addedColumns?.[c]}`);
      }
      if (gaps.includes(parts.index)) await db.query(t.indexDdl(table, index));
    },
  });
}

/**
 * Deletes rows whose expiry has passed, as DynamoDB TTL does (renewals keep a live claim's expiry ahead of its lease,
 * so no running claim is removed). Returns how many were deleted.
 */
export async function deleteExpired(
  pool: PostgresPool,
  options: PostgresTableOptions & { nowSeconds?: number } = {},
): Promise<number> {
  const table = qualified(options.schema ?? DEFAULT_SCHEMA, options.table ?? DEFAULT_STATE_TABLE);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const out = await pool.query(`DELETE FROM ${table} WHERE expires_at < $1`, [now]);
  return out.rowCount ?? 0;
}

/** The `pool` option of the store and the sink. */
export const poolField = required(
  custom<PostgresPool>(
    "a pg Pool",
    (v) =>
      typeof (v as PostgresPool | null)?.query === "function" &&
      typeof (v as PostgresPool | null)?.connect === "function",
  ),
);
