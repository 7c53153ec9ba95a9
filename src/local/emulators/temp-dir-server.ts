import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerProcess } from "./server-process.js";

/** A server started by `startInTempDir`: where it listens, and its stop. */
export interface TempDirServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server, then removes its directory. */
  stop(): Promise<void>;
}

/** What `startInTempDir`'s `start` gives back: the server, where it listens, and the signal that stops it. */
export interface StartedInDir {
  server: ServerProcess;
  url: string;
  port: number;
  stopSignal: NodeJS.Signals;
}

/**
 * A server whose files live in a temp directory of its own (`<tmpdir>/<prefix>…`), given to `start`: the directory is
 * removed when the server stops, or when `start` fails, so that nothing outlives the run.
 */
export async function startInTempDir(
  prefix: string,
  start: (dir: string) => Promise<StartedInDir>,
): Promise<TempDirServer> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    const { server, url, port, stopSignal } = await start(dir);
    return {
      url,
      port,
      async stop() {
        await server.stop(stopSignal);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
