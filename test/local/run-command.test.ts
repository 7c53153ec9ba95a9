import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { pictures } from "../../examples/images/pictures.js";
import type { RunReport } from "../../src/cli/run/run-handler.js";
import { eonce } from "./cli-helpers.js";

const suffix = () => randomUUID().slice(0, 8);
const endpoint = () => ["--dynamodb-endpoint", inject("dynamodbEndpoint")];
const parse = (stdout: string): RunReport =>
  JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as RunReport;

// Side by side: each test spawns its own `eonce run` (its own servers and tables).
describe.concurrent("eonce run", () => {
  it("runs the records example's Lambda handler with faults: every invariant holds", async () => {
    const t = suffix();
    const { code, stdout, stderr } = await eonce([
      "run",
      "examples/records/lambda.ts:handler",
      "--generate",
      "20",
      "--reupload",
      "4",
      "--table",
      `records-${t}:id`,
      "--env",
      `RECORDS_TABLE=records-${t}`,
      "--env",
      "LEASE_MS=2000",
      "--state-table",
      `state-${t}`,
      "--effects",
      `records-${t}:sequencer`,
      "--duplicate-rate",
      "0.4",
      "--fail-after-rate",
      "0.3",
      "--seed",
      "2",
      "--json",
      ...endpoint(),
    ]);
    expect(stderr).not.toMatch(/Error:/);
    const report = parse(stdout);
    expect(report).toMatchObject({ source: "direct", uploads: 24, events: 24 });
    expect(report.deliveries).toBeGreaterThan(24);
    expect(report.outcomes.duplicate).toBeGreaterThan(0);
    expect(report.invariants.map((c) => [c.id, c.status])).toEqual([
      ["I1", "pass"],
      ["I2", "pass"],
      ["I3", "pass"],
      ["I4", "pass"],
    ]);
    expect(code).toBe(0);
  }, 240_000);

  it("runs the images example's handler behind EventBridge and checks the final positions (I2)", async () => {
    const t = suffix();
    const folder = await mkdtemp(join(tmpdir(), "eonce-pictures-"));
    const { cat, dog } = await pictures();
    for (let i = 0; i < 4; i++) await writeFile(join(folder, `pet ${i}.png`), i % 2 ? cat : dog);
    const { code, stdout } = await eonce([
      "run",
      "examples/images/lambda.ts:handler",
      "--source",
      "eventbridge",
      "--from",
      folder,
      "--reupload",
      "6",
      "--state-table",
      `img-state-${t}`,
      "--output-bucket",
      `img-out-${t}`,
      "--env",
      "LEASE_MS=2000",
      "--duplicate-rate",
      "0.3",
      "--json",
      ...endpoint(),
    ]);
    await rm(folder, { recursive: true, force: true });
    const report = parse(stdout);
    expect(report.uploads).toBe(10);
    const i2 = report.invariants.find((c) => c.id === "I2");
    expect(i2?.status).toBe("pass");
    expect(i2?.detail).toMatch(/ordered subjects, each committed at its newest event/);
    expect(code).toBe(0);
  }, 240_000);

  it("catches the naive handler's duplicate rows (I1 fails, exit code 1)", async () => {
    const t = suffix();
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/naive-records.ts:handler",
      "--generate",
      "12",
      "--table",
      `naive-${t}:id`,
      "--env",
      `RECORDS_TABLE=naive-${t}`,
      "--effects",
      `naive-${t}:sequencer`,
      "--duplicate-rate",
      "0.5",
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    const i1 = report.invariants.find((c) => c.id === "I1");
    expect(i1?.status).toBe("fail");
    expect(i1?.detail).toMatch(/more than one row/);
    expect(code).toBe(1);
  }, 240_000);
});
