import type { Pool, PoolClient } from "pg";
import { OptionsError } from "../../core/errors.js";
import { custom, type Field, required, string } from "../../core/options.js";

/** What the store, the sink and `migrate` run statements on: a `pg.Pool` (transactions take one of its clients). */
export interface PostgresPool {
  query: Pool["query"];
  connect(): Promise<PostgresClient>;
}
export type PostgresClient = Pick<PoolClient, "query" | "release">;

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
 * Creates the schema and the state table if missing (idempotent: safe on every cold start and in a deploy step).
 * Postgres has no TTL: run `deleteExpired` from a schedule to keep the table small.
 */
export async function migrate(pool: PostgresPool, options: PostgresTableOptions = {}): Promise<void> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const table = qualified(schema, options.table ?? DEFAULT_STATE_TABLE);
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${quote(schema)}`);
  await pool.query(stateTableDdl(table));
  // Tables created before the column existed get it here (idempotent).
  await pool.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS committed_fingerprint text`);
  const index = quote(`${(options.table ?? DEFAULT_STATE_TABLE).slice(0, 50)}_expires_at`);
  await pool.query(`CREATE INDEX IF NOT EXISTS ${index} ON ${table} (expires_at)`);
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
