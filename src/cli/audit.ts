import type { Command } from "commander";

/**
 * `eonce audit`: finds the seed failure modes in an existing system. Each check is a subcommand in its own module
 * (`audit template`, `audit table`), registered on the command this returns.
 */
export function registerAudit(program: Command): Command {
  return program
    .command("audit")
    .description("find the failure modes that cause duplicate or stale effects in an existing system");
}
