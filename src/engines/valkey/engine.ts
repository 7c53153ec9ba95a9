import type { EngineConnection } from "../connection.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import type { Engine, LocalServerRole, OpenAdminContext } from "../engine.js";
import { LOCAL_VALKEY_URL } from "./client.js";

/** The variable the README's handlers read the server's URL from. */
const URL_VARIABLE = "VALKEY_URL";

/** The server the operator's commands connect to: `--url`, else `VALKEY_URL`, else this machine's. */
function urlOf(c: EngineConnection): string {
  return c.url ?? process.env[URL_VARIABLE] ?? LOCAL_VALKEY_URL;
}

/** The URL without its password, for reports. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

/** An ioredis client for the operator's commands: ioredis is an optional peer, loaded only now. */
async function openAdmin(c: EngineConnection, context: OpenAdminContext) {
  let Redis: typeof import("ioredis").Redis;
  try {
    ({ Redis } = await import("ioredis"));
  } catch (cause) {
    throw context.missingPeer("ioredis", cause);
  }
  const { ValkeyStateAdmin } = await import("./admin.js");
  const { noteConnectionError } = await import("./errors.js");
  // A few retries only: an operator's command against a server that is down should fail, not hang.
  const client = new Redis(urlOf(c), { maxRetriesPerRequest: 2, lazyConnect: true });
  // Listened to, ioredis does not print connection errors itself; the failed command names the last one.
  client.on("error", (error: Error) => noteConnectionError(client, error));
  try {
    return new ValkeyStateAdmin({ client, ...(c.keyPrefix ? { keyPrefix: c.keyPrefix } : {}) });
  } catch (error) {
    client.disconnect();
    throw error;
  }
}

/**
 * A Valkey or Redis of `eonce run`'s own, from this machine's binary; without one, `eonce run` starts none (the
 * handler's default: this machine's port 6379).
 */
const localServer = {
  option: "url",
  description: "Valkey or Redis (valkey-server or redis-server on the PATH)",
  available: async () =>
    (await import("../../local/emulators/valkey-local.js")).valkeyServerBinary() !== undefined,
  start: async () => (await import("../../local/emulators/valkey-local.js")).startValkeyLocal(),
} as const satisfies LocalServerRole;

/** Valkey or Redis: the state in hashes under a key prefix (docs/valkey.md). */
export const valkeyEngine = {
  name: "valkey",
  displayName: "Valkey",
  folder: "valkey",
  server: true,
  inline: false,
  connection: ["url", "keyPrefix"],
  requires: [],
  env: { url: URL_VARIABLE, keyPrefix: "STATE_KEY_PREFIX" },
  limits: {
    // The same default as DynamoDB's (a store's maxResultBytes raises it, up to 64 MB).
    maxResultBytes: DYNAMODB_MAX_RESULT_BYTES,
    // One script: no limit of the engine's.
    maxWritesPerCommit: Number.POSITIVE_INFINITY,
  },
  durable: true,
  // A failover to a replica that lacks the last acknowledged writes; WAIT timing out (src/engines/valkey/sim-replica.ts).
  serverFaults: ["failover", "wait-timeout"],
  openAdmin,
  localServer,
  openDemoStates: async () => (await import("./demo-states.js")).valkeyDemoStates(),
  openSimEnv: async () => (await import("./sim-backend.js")).valkeySimEnv(),
  where: (c) => `valkey ${shown(urlOf(c))} ${c.keyPrefix ?? "eonce:"}`,
} as const satisfies Engine;
