import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addSchemaOptions } from "../src/cli/options.js";
import { RUN_OPTIONS } from "../src/cli/run/options.js";
import { FAULT_OPTIONS } from "../src/sim/live/faults.js";

/** A command with the fault flags, parsed from `args`; commander's errors are thrown, not printed. */
function parse(args: string[]) {
  const command = new Command("t").exitOverride().configureOutput({ writeErr: () => {} });
  const read = addSchemaOptions(command, FAULT_OPTIONS);
  command.parse(args, { from: "user" });
  return read(command.opts());
}

describe("flags from an option schema", () => {
  it("names each flag after its key, with the field's default and help", () => {
    const command = new Command("t");
    addSchemaOptions(command, FAULT_OPTIONS);
    const slow = command.options.find((o) => o.long === "--slow-ms");
    expect(slow?.flags).toBe("--slow-ms <ms>");
    expect(slow?.description).toBe(FAULT_OPTIONS.slowMs.doc);
    expect(slow?.defaultValue).toBe(0);
    expect(command.options.map((o) => o.long)).toContain("--faulty-attempts");
  });

  it("reads values back under the schema's keys, parsed from text", () => {
    expect(parse(["--duplicate-rate", "0.25", "--faulty-attempts", "3"])).toMatchObject({
      duplicateRate: 0.25,
      faultyAttempts: 3,
      crashRate: 0,
    });
  });

  it("checks each value with its field: a bad one is a usage error naming what is expected", () => {
    expect(() => parse(["--crash-rate", "2"])).toThrow(
      /--crash-rate <p>.*must be a number in \[0, 1\], got 2/,
    );
    expect(() => parse(["--faulty-attempts", "x"])).toThrow(/must be a non-negative integer/);
  });

  it("takes another flag name, choices, switches and repeatable flags from the schema and its specs", () => {
    const command = new Command("t").exitOverride();
    const read = addSchemaOptions(command, RUN_OPTIONS, {
      reuploads: { name: "reupload" },
      env: {
        parse: (text, previous) => ({
          ...(previous as object),
          [text.split("=")[0] ?? ""]: text.split("=")[1],
        }),
      },
    });
    command.parse(["--reupload", "2", "--source", "sqs", "--fifo", "--env", "A=1", "--env", "B=2"], {
      from: "user",
    });
    expect(read(command.opts())).toMatchObject({
      reuploads: 2,
      source: "sqs",
      fifo: true,
      env: { A: "1", B: "2" },
    });
    expect(command.options.find((o) => o.long === "--source")?.argChoices).toEqual([
      "direct",
      "sqs",
      "sns-sqs",
      "eventbridge",
      "kinesis",
      "dynamodb-streams",
    ]);
    expect(command.options.some((o) => o.long === "--handler" || o.long === "--java-path")).toBe(false);
  });
});
