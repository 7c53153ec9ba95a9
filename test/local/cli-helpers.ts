import { spawn } from "node:child_process";

/** Runs `eonce <args>` the way `npm run eonce` does (tsx), collecting its output; `env` on top of the test's. */
export function eonce(
  args: string[],
  timeoutMs = 240_000,
  env: NodeJS.ProcessEnv = {},
  /** Called with the child and its stderr so far on every chunk of stderr (to act on what it says). */
  onStderr?: (child: import("node:child_process").ChildProcess, stderr: string) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
      cwd: process.cwd(),
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      onStderr?.(child, stderr);
    });
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error(`eonce ${args.join(" ")} did not finish in ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    // "close", not "exit": exit can come before the pipes are drained, and the end of stdout (the --json report) lost.
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
