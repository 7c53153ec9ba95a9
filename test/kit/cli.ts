import { Command, CommanderError } from "commander";
import { vi } from "vitest";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * An `eonce` subcommand in this process, as src/cli/main.ts runs it: `register` adds it to a fresh program, `argv`
 * is what follows `eonce`. Output is captured; the exit code is `process.exitCode`, or 2 for commander's usage
 * errors (as main.ts maps them). No spawn: a tsx process per case costs seconds.
 */
export async function runCli(register: (program: Command) => void, argv: string[]): Promise<CliRun> {
  const program = new Command("eonce").exitOverride();
  register(program);
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  const before = process.exitCode;
  process.exitCode = undefined;
  let code: number;
  try {
    await program.parseAsync(["node", "eonce", ...argv]);
    code = Number(process.exitCode ?? 0);
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    code = e.exitCode === 0 ? 0 : 2;
  } finally {
    out.mockRestore();
    err.mockRestore();
    process.exitCode = before;
  }
  return { code, stdout, stderr };
}
