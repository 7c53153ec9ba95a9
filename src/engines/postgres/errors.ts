import { StoreError } from "../../core/errors.js";

/**
 * SQLSTATE classes worth retrying: the connection (08), a transaction rolled back by the server (40: serialization
 * failure, deadlock), resources (53), a lock not available (55P03), operator intervention such as a restart or a
 * statement timeout (57), and system errors (58). Any other SQLSTATE is the server refusing this statement for good
 * (a constraint, a syntax error, a missing table, bad data). An error without a SQLSTATE never reached an answer
 * (a refused or dropped connection), so whether it landed is unknown: retryable.
 */
const RETRYABLE_CLASSES = new Set(["08", "40", "53", "57", "58"]);

/**
 * Whether a PostgreSQL error may pass on a retry: connection errors, serialization failures, deadlocks, lock
 * and statement timeouts.
 */
export function isRetryablePostgresError(error: unknown): boolean {
  const code = sqlState(error);
  if (code === undefined) return true;
  return RETRYABLE_CLASSES.has(code.slice(0, 2)) || code === "55P03";
}

/** The server's SQLSTATE; node-postgres sets `severity` only on errors the server sent (not on EPIPE and the like). */
function sqlState(error: unknown): string | undefined {
  const e = error as { code?: unknown; severity?: unknown } | null;
  return typeof e?.code === "string" && typeof e.severity === "string" ? e.code : undefined;
}

export function postgresStoreError(op: string, what: string, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const code = sqlState(error);
  const message = error instanceof Error ? error.message : String(error);
  const sqlstate = code ? ` (${code})` : "";
  return new StoreError(`PostgreSQL ${op} of ${what} failed${sqlstate}: ${message.slice(0, 500)}`, {
    cause: error,
    retryable: isRetryablePostgresError(error),
  });
}

/** What a migration waited for when its lock wait ended: the table, or another migration of the same schema. */
export type MigrationLockHolder = "table" | "migration";

/**
 * A migration (`migrate`, `migrateInline`) with work to do did not get a lock within its `lockTimeoutMs`: a long
 * transaction holds the table (a reader, pg_dump, a session idle in transaction), or another migration of the schema
 * held the migration lock that long. Nothing was changed, and statements queued behind the migration's lock request
 * waited at most that long. Retryable: a later cold start or a deploy step may find the table free.
 */
export class MigrationLockTimeoutError extends StoreError {
  /** The table the migration was for, quoted and qualified. */
  readonly table: string;
  readonly lockTimeoutMs: number;
  /** What the table lacked (columns, an index, the table itself). */
  readonly missing: readonly string[];
  readonly waitedFor: MigrationLockHolder;

  constructor(
    o: {
      what: string;
      table: string;
      lockTimeoutMs: number;
      missing: readonly string[];
      waitedFor: MigrationLockHolder;
    },
    options: { cause: unknown },
  ) {
    const why =
      o.waitedFor === "table"
        ? `the migration could not lock it within lockTimeoutMs (${o.lockTimeoutMs} ms): a long transaction holds it (a reader, pg_dump, a session idle in transaction; see pg_stat_activity and pg_locks)`
        : `another migration of the same schema held the migration lock for more than lockTimeoutMs (${o.lockTimeoutMs} ms), probably waiting for a long transaction on the table`;
    super(
      `${o.what}: ${o.table} lacks ${o.missing.join(", ")}, but ${why}. Nothing was changed. End that transaction and retry, run the migration in a deploy step, or raise lockTimeoutMs.`,
      { cause: options.cause, retryable: true },
    );
    this.table = o.table;
    this.lockTimeoutMs = o.lockTimeoutMs;
    this.missing = o.missing;
    this.waitedFor = o.waitedFor;
  }
}
