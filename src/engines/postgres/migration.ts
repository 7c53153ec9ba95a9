import { OptionsError } from "../../core/errors.js";
import { integer, type Resolved, resolveOptions, type Schema } from "../../core/options.js";
import { MigrationLockTimeoutError } from "./errors.js";
import type { PostgresPool } from "./pool.js";

/** Where a migration's statements run: the pool (the first catalog read) or the migration's own transaction. */
export type Queryable = Pick<PostgresPool, "query">;

/** A migration: what it reads from the catalog and the DDL it runs for what is missing. */
export interface Migration {
  /** `migrate` or `migrateInline`, for messages. */
  readonly what: string;
  /** The schema whose migrations the advisory lock serialises. */
  readonly schema: string;
  /** The table the DDL is for, quoted and qualified. */
  readonly table: string;
  readonly lockTimeoutMs: number;
  /** What is missing (described for messages), read from the catalog without locking the table; empty: nothing. */
  missing(db: Queryable): Promise<string[]>;
  /** The DDL of what is missing, in the migration's transaction. */
  addMissing(db: Queryable, missing: readonly string[]): Promise<void>;
}

/** Long enough for DDL on a free table; short enough that statements queued behind a stuck migration barely notice. */
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 3000;

export const lockTimeoutField = integer({ min: 1, max: 600_000, default: DEFAULT_MIGRATION_LOCK_TIMEOUT_MS });

/** Options of the stores that a migration ignores: the store's own options object may be passed as it is. */
const STORE_ONLY_KEYS = ["pool", "rowKey", "maxResultBytes", "preparedStatements"];

/** A migration's options, checked before any statement runs. */
export function migrationOptions<S extends Schema>(what: string, schema: S, options: unknown): Resolved<S> {
  if (typeof options !== "object" || options === null)
    throw new OptionsError(`${what}: options must be an object`);
  const own = Object.fromEntries(Object.entries(options).filter(([k]) => !STORE_ONLY_KEYS.includes(k)));
  return resolveOptions(what, schema, own);
}

/** The advisory lock's first key (its second: the schema's hash), so that it does not meet an application's. */
const LOCK_CLASS = "effectively-once migrations";

/**
 * Runs a migration safely beside live traffic and under concurrent cold starts.
 *
 * Nothing missing (every cold start but the first): one catalog read, no DDL, no lock on the table. `IF NOT EXISTS`
 * DDL would not do: `ALTER TABLE … ADD COLUMN IF NOT EXISTS` takes ACCESS EXCLUSIVE (and `CREATE INDEX IF NOT
 * EXISTS` SHARE) before it looks, so behind any long transaction on the table it queues, and every statement on the
 * table queues behind it.
 *
 * Work to do: one transaction under `lock_timeout`, serialised by a transaction-scoped advisory lock per schema;
 * under it the catalog is read again (another cold start may have done the work; READ COMMITTED whatever the pool's
 * default, so that this read sees the last holder's commit) and only what is still missing runs. The lock, not catching duplicate errors: `CREATE … IF NOT EXISTS` checks before it inserts its catalog
 * rows, so concurrent ones fail with 23505 on pg_namespace or pg_type (or 42P07), a code other unique violations share,
 * and an error aborts the transaction, which would need a savepoint per statement. Per schema, because CREATE SCHEMA
 * races between tables too. Every lock wait (the advisory lock's included) ends at lockTimeoutMs with
 * MigrationLockTimeoutError and nothing changed: statements queued behind the migration wait at most that long.
 */
export async function runMigration(pool: PostgresPool, m: Migration): Promise<void> {
  let missing = await m.missing(pool);
  if (missing.length === 0) return;
  const client = await pool.connect();
  let waitedFor: "migration" | "table" = "migration";
  try {
    await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
    await client.query("SELECT set_config('lock_timeout', $1, true)", [`${m.lockTimeoutMs}ms`]);
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", [LOCK_CLASS, m.schema]);
    missing = await m.missing(client);
    waitedFor = "table";
    if (missing.length > 0) await m.addMissing(client, missing);
    await client.query("COMMIT");
  } catch (error) {
    const rolledBack = await client.query("ROLLBACK").then(
      () => true,
      () => false,
    );
    client.release(rolledBack ? undefined : error instanceof Error ? error : true);
    if (!isLockTimeout(error)) throw error;
    const { what, table, lockTimeoutMs } = m;
    throw new MigrationLockTimeoutError({ what, table, lockTimeoutMs, missing, waitedFor }, { cause: error });
  }
  client.release();
}

/** lock_not_available: a lock wait reached lock_timeout. */
function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "55P03";
}
