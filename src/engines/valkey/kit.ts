import type { EngineConnection } from "../connection.js";
import type { EngineKit, OpenAdminContext } from "../kit.js";
import { ValkeyStateAdmin } from "./admin.js";
import { LOCAL_VALKEY_URL } from "./client.js";
import { noteConnectionError } from "./errors.js";
import { valkeySimEnv } from "./sim-backend.js";

/** The server the operator's commands connect to: `--url`, else `VALKEY_URL`, else this machine's. */
function urlOf(c: EngineConnection): string {
  return c.url ?? process.env.VALKEY_URL ?? LOCAL_VALKEY_URL;
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
async function admin(c: EngineConnection, context: OpenAdminContext): Promise<ValkeyStateAdmin> {
  let Redis: typeof import("ioredis").Redis;
  try {
    ({ Redis } = await import("ioredis"));
  } catch (cause) {
    throw context.missingPeer("ioredis", cause);
  }
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

/** Valkey or Redis: the state in hashes under a key prefix (docs/valkey.md). */
export const valkeyKit: EngineKit = {
  openAdmin: admin,
  openSimEnv: () => valkeySimEnv(),
  where: (c) => `valkey ${shown(urlOf(c))} ${c.keyPrefix ?? "eonce:"}`,
};
