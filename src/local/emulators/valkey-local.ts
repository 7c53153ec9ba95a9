import { freePort } from "./free-port.js";
import { findExecutable } from "./requirements.js";
import { ServerStartError, startServerProcess } from "./server-process.js";
import { startInTempDir } from "./temp-dir-server.js";

/**
 * A Valkey or Redis server of its own, from this machine's `valkey-server` or `redis-server` (neither comes from
 * npm): a free port bound to 127.0.0.1, nothing saved to disk (`--save "" --appendonly no`), its folder a temp
 * directory. The test setup (test/global-setup.ts) and `eonce run` start it where no server URL is given.
 */
export interface LocalValkey {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The binaries looked for on the PATH, in this order. */
export const VALKEY_SERVERS = ["valkey-server", "redis-server"] as const;

/** What to say when neither is on the PATH. */
export function missingValkeyServer(): string {
  return (
    "a local Valkey needs valkey-server or redis-server on the PATH: run `sudo apt-get install -y redis-server` " +
    "(or install Valkey), or give the URL of a running server"
  );
}

/** The first of VALKEY_SERVERS on the PATH, or undefined. */
export function valkeyServerBinary(): string | undefined {
  return VALKEY_SERVERS.find((name) => findExecutable(name));
}

export async function startValkeyLocal(options: { startTimeoutMs?: number } = {}): Promise<LocalValkey> {
  const binary = valkeyServerBinary();
  if (!binary) throw new ServerStartError(missingValkeyServer());
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  return await startInTempDir("eonce-valkey-", async (dir) => ({
    server: await startServerProcess({
      what: binary,
      command: binary,
      args: [...args, "--dir", dir],
      ready: /Ready to accept connections/,
      timeoutMs: options.startTimeoutMs ?? 30_000,
    }),
    url: `redis://127.0.0.1:${port}`,
    port,
    stopSignal: "SIGTERM",
  }));
}
