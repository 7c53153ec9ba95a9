import { StoreError } from "../../core/errors.js";

/**
 * SQLSTATE classes worth retrying: the connection (08), a transaction rolled back by the server (40: serialization
 * failure, deadlock), resources (53), a lock not available (55P03), operator intervention such as a restart or a
 * statement timeout (57), and system errors (58). Any other SQLSTATE is the server refusing this statement for good
 * (a constraint, a syntax error, a missing table, bad data). An error without a SQLSTATE never reached an answer
 * (a refused or dropped connection), so whether it landed is unknown: retryable.
 */
const RETRYABLE_CLASSES = new Set(["08", "40", "53", "57", "58"]);

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
