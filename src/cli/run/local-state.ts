import { engine } from "../../engines/registry.js";
import { startPostgresLocal } from "../../local/emulators/postgres-local.js";
import { startValkeyLocal, valkeyServerBinary } from "../../local/emulators/valkey-local.js";
import type { ResolvedRunOptions, RunHandlerOptions } from "./options.js";

/**
 * The state server `eonce run` starts itself when the run names a server engine and no server: `--state-store
 * postgres` (or `postgres-inline`) without `--database-url` or DATABASE_URL starts a PostgreSQL of the run's own
 * (src/local/emulators/postgres-local.ts), `--state-store valkey` without `--state-url` or VALKEY_URL a Valkey or
 * Redis from this machine's binary where there is one (else the handler's default, this machine's port 6379), as
 * `dynamodb` starts DynamoDB Local. The run then goes on as if its URL had been given; the server is stopped, its
 * data gone, when the run ends.
 */
export interface LocalStateServer {
  /** The run's options with the started server's URL (the given ones when nothing was started). */
  options: RunHandlerOptions;
  /** `DATABASE_URL` or `VALKEY_URL` → the started server's URL, for `--keep`'s list of endpoints. */
  endpoints: Record<string, string>;
  stop(): Promise<void>;
}

/** Whether the handler would find its server's URL by itself: a flag, `--env`, or this process's environment. */
function given(o: ResolvedRunOptions, variable: string, flag: string | undefined): boolean {
  return flag !== undefined || o.env?.[variable] !== undefined || process.env[variable] !== undefined;
}

export async function startLocalState(
  options: RunHandlerOptions,
  o: ResolvedRunOptions,
): Promise<LocalStateServer> {
  const connection = o.state ? engine(o.state.store).connection : [];
  const none = { options, endpoints: {}, stop: async () => {} };
  if (connection.includes("databaseUrl") && !given(o, "DATABASE_URL", o.databaseUrl)) {
    const server = await startPostgresLocal();
    const endpoints = { DATABASE_URL: server.url };
    const stop = () => ignoringDisconnects(() => server.stop());
    return { options: { ...options, databaseUrl: server.url }, endpoints, stop };
  }
  if (connection.includes("url") && !given(o, "VALKEY_URL", o.stateUrl) && valkeyServerBinary()) {
    const server = await startValkeyLocal();
    const endpoints = { VALKEY_URL: server.url };
    return { options: { ...options, stateUrl: server.url }, endpoints, stop: () => server.stop() };
  }
  return none;
}

/**
 * Whether the run needs DynamoDB: its state or inline rows are there, it creates tables or counts effects in one,
 * it reuses one (`--dynamodb-endpoint`), or it does not say where the state is (the handler's default). A run on
 * PostgreSQL, SQLite or Valkey alone starts no DynamoDB Local (no Java).
 */
export function needsDynamoDB(o: ResolvedRunOptions): boolean {
  if (!o.state || o.dynamodbEndpoint !== undefined || o.effects !== undefined || o.durable !== undefined)
    return true;
  return (o.tables?.length ?? 0) > 0 || engine(o.state.store).connection.includes("endpoint");
}

/** A connection closed by the server's shutdown: PostgreSQL's 57P01, or the socket's end. */
function isDisconnect(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === "57P01" ||
    e?.code === "ECONNRESET" ||
    (typeof e?.message === "string" && /Connection terminated unexpectedly/.test(e.message))
  );
}

/**
 * Runs `stop` (the run's own server's shutdown) with the handler's disconnections ignored: the handler runs in this
 * process, and an idle pooled connection of a pool without an `error` listener (pg's default) would otherwise throw
 * as the server it was told to use goes away after the run, the run's doing, not the handler's. Any other uncaught
 * error is thrown on.
 */
async function ignoringDisconnects(stop: () => Promise<void>): Promise<void> {
  const listener = (error: unknown) => {
    if (isDisconnect(error)) return;
    process.off("uncaughtException", listener);
    throw error;
  };
  process.on("uncaughtException", listener);
  try {
    await stop();
    // The sockets' last events come after the server's exit.
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    process.off("uncaughtException", listener);
  }
}
