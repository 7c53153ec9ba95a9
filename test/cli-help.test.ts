import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerDemo } from "../src/cli/demo.js";
import { registerInspect } from "../src/cli/inspect.js";
import { registerRun } from "../src/cli/run.js";

describe("eonce --help", () => {
  const program = new Command("eonce");
  registerInspect(program);
  registerDemo(program);
  registerRun(program);

  for (const command of program.commands) {
    it(`${command.name()}: every option states its default at most once`, () => {
      const help = command.helpInformation();
      for (const line of help.split("\n")) {
        expect(line.match(/\(default:? /g)?.length ?? 0, line).toBeLessThanOrEqual(1);
      }
    });
  }

  it("demo has --scenario and --scale", () => {
    const demo = program.commands.find((c) => c.name() === "demo");
    expect(demo?.options.map((o) => o.long)).toEqual(expect.arrayContaining(["--scenario", "--scale"]));
  });
});
