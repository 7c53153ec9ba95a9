import { engine } from "../../engines/registry.js";
import { type ResolvedRunOptions, RUN_CONNECTION_FIELDS, type RunHandlerOptions } from "./options.js";

/**
 * The state server `eonce run` starts itself when the run names an engine with a `localServer` (src/engines/engine.ts)
 * and no server: `--state-store postgres` (with `--inline` or not) without `--database-url` or DATABASE_URL starts a
 * PostgreSQL of the run's own (src/local/emulators/postgres-local.ts), `--state-store valkey` without `--state-url` or
 * VALKEY_URL a Valkey or Redis from this machine's binary where there is one (else the handler's default, this
 * machine's port 6379), as `dynamodb` starts DynamoDB Local. The run then goes on as if its URL had been given; the
 * server is stopped, its data gone, when the run ends.
 */
export interface LocalStateServer {
  /** The run's options with the started server's URL (the given ones when nothing was started). */
  options: RunHandlerOptions;
  /** The handler's variable of the URL (`DATABASE_URL`, `VALKEY_URL`) → the started server's URL, for `--keep`. */
  endpoints: Record<string, string>;
  stop(): Promise<void>;
}

/** Whether the handler would find its server's URL by itself: a flag, `--env`, or this process's environment. */
function given(o: ResolvedRunOptions, variable: string | undefined, flag: unknown): boolean {
  if (flag !== undefined) return true;
  return variable !== undefined && (o.env?.[variable] !== undefined || process.env[variable] !== undefined);
}

export async function startLocalState(
  options: RunHandlerOptions,
  o: ResolvedRunOptions,
): Promise<LocalStateServer> {
  const none = { options, endpoints: {}, stop: async () => {} };
  const e = o.state ? engine(o.state.store, o.state) : undefined;
  const local = e?.localServer;
  if (!e || !local || !o.state) return none;
  const variable = e.env[local.option];
  if (given(o, variable, o.state[local.option])) return none;
  if (local.available && !(await local.available())) return none;
  const server = await local.start();
  const field = RUN_CONNECTION_FIELDS[local.option as keyof typeof RUN_CONNECTION_FIELDS];
  return {
    options: { ...options, [field]: server.url },
    endpoints: variable ? { [variable]: server.url } : {},
    stop: () => ignoringDisconnects(() => server.stop()),
  };
}

/** The handler's variables the state's connection sets (`Engine.env`; `table` is STATE_TABLE on every engine). */
export function stateEnvironment(o: ResolvedRunOptions): Record<string, string> {
  if (!o.state) return {};
  const c = o.state;
  const variables: Record<string, string | undefined> = { table: "STATE_TABLE", ...engine(c.store, c).env };
  const env: Record<string, string> = {};
  for (const [key, variable] of Object.entries(variables)) {
    const value = c[key as keyof typeof c];
    if (variable !== undefined && value !== undefined) env[variable] = String(value);
  }
  return env;
}

/**
 * Whether the run needs DynamoDB: its state or inline rows are there, it creates tables or counts effects in one,
 * it reuses one (`--dynamodb-endpoint`), or it does not say where the state is (the handler's default). A run on
 * an engine without the `endpoint` option alone starts no DynamoDB Local (no Java).
 */
export function needsDynamoDB(o: ResolvedRunOptions): boolean {
  if (!o.state || o.dynamodbEndpoint !== undefined || o.effects !== undefined || o.durable !== undefined)
    return true;
  return (o.tables?.length ?? 0) > 0 || engine(o.state.store, o.state).connection.includes("endpoint");
}

/** A connection closed by the server's shutdown: SQLSTATE 57P01 (admin shutdown), or the socket's end. */
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
