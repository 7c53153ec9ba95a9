import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";

/**
 * A server run as a child process (PostgreSQL, Valkey or Redis): started, awaited until it prints that it is ready,
 * stopped with a signal. A child that is still running when this process exits is killed then, so that a run ended
 * by an uncaught error leaves no server behind.
 */
export interface ServerProcess {
  readonly child: ChildProcess;
  /** Sends `signal`, waits for the exit (SIGKILL after 5 s). */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface StartServerProcess {
  /** What the server is, for messages: "PostgreSQL". */
  what: string;
  command: string;
  args: readonly string[];
  spawn?: SpawnOptions;
  /** The line (stdout or stderr) that says the server accepts connections. */
  ready: RegExp;
  timeoutMs: number;
}

/** A typed failure to start, with the tail of the server's output. */
export class ServerStartError extends Error {
  override name = "ServerStartError";
}

export async function startServerProcess(o: StartServerProcess): Promise<ServerProcess> {
  const child = spawn(o.command, [...o.args], { ...o.spawn, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const exit = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  exit.then(() => process.off("exit", killOnExit));
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    try {
      await exit;
    } finally {
      clearTimeout(timer);
    }
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ServerStartError(`${o.what} did not start in ${o.timeoutMs} ms: ${last(output)}`)),
        o.timeoutMs,
      );
      const collect = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-4000);
        if (o.ready.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", collect);
      child.stderr?.on("data", collect);
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(new ServerStartError(`${o.what} could not be started (${o.command}): ${error.message}`));
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new ServerStartError(`${o.what} exited (${code ?? signal}): ${last(output)}`));
      });
    });
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  }
  // Drained, so that a chatty server never blocks on a full pipe.
  child.stdout?.removeAllListeners("data").resume();
  child.stderr?.removeAllListeners("data").resume();
  return { child, stop };
}

/** The server's last line of output, or "no output". */
function last(output: string): string {
  return output.trim().split("\n").filter(Boolean).at(-1) ?? "no output";
}
