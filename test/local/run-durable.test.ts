import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { RunReport } from "../../src/cli/run/run-handler.js";
import { normalizeSequencer } from "../../src/core/position.js";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { scanTable } from "../../src/local/emulators/scan-table.js";
import { eonce } from "./cli-helpers.js";

/**
 * `eonce run` on a durable dispatcher: its Invokes reach the local Lambda endpoint (with lost answers and failures
 * before the start), `--durable` runs each started execution under LocalDurableTestRunner, and D1–D3 are checked.
 * The images durable workflow passes them under duplicates and reordering; wrong dispatchers fail them.
 */
const suffix = () => randomUUID().slice(0, 8);
const endpoint = () => ["--dynamodb-endpoint", inject("dynamodbEndpoint")];
/** The report `--json` printed last; a run that printed none fails with what it wrote to stderr. */
const parse = ({ stdout, stderr }: { stdout: string; stderr: string }): RunReport => {
  const last = stdout.trim().split("\n").at(-1) ?? "";
  if (!last.startsWith("{")) throw new Error(`eonce run printed no report; stderr:\n${stderr.slice(-3000)}`);
  return JSON.parse(last) as RunReport;
};
const statuses = (r: RunReport) =>
  [...r.invariants, ...(r.durable?.checks ?? [])].map((c) => [c.id, c.status]);

let dir: string;
/** Three rounds of three keys: each key's versions, for reordering to put out of order. */
let versions: string;
/** Five rounds: under a load that spreads the uploads out, reordering still mixes each key's versions. */
let manyVersions: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "eonce-durable-"));
  versions = join(dir, "three");
  manyVersions = join(dir, "five");
  for (const [folder, rounds] of [
    [versions, 3],
    [manyVersions, 5],
  ] as const) {
    for (let round = 1; round <= rounds; round++) {
      await mkdir(join(folder, String(round)), { recursive: true });
      for (const key of ["a", "b", "c"]) {
        await writeFile(join(folder, String(round), `${key}.txt`), `round ${round} of ${key}`);
      }
    }
  }
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe.concurrent("eonce run on a durable dispatcher", () => {
  it.each([1, 2, 3])(
    "the images durable workflow, seed %i: duplicates, reordering, lost and failed Invokes; D1–D3 and I1–I4 pass",
    async (seed) => {
      const t = suffix();
      const { code, stdout, stderr } = await eonce([
        "run",
        "examples/images-durable/lambda.ts:handler",
        "--source",
        "eventbridge",
        "--versions",
        versions,
        "--reupload",
        "2",
        "--state-table",
        `dur-state-${t}`,
        "--table",
        `dur-effects-${t}:pk`,
        "--env",
        `EFFECTS_TABLE=dur-effects-${t}`,
        "--output-bucket",
        `dur-thumbs-${t}`,
        "--durable",
        "examples/images-durable/lambda.ts:workflow",
        "--duplicate-rate",
        "0.4",
        "--reorder-window-ms",
        "300",
        "--invoke-lost-rate",
        "0.2",
        "--invoke-fail-rate",
        "0.15",
        "--seed",
        String(seed),
        "--json",
        ...endpoint(),
      ]);
      expect(stderr).not.toMatch(/Error:/);
      const report = parse({ stdout, stderr });
      expect(statuses(report)).toEqual([
        ["I1", "pass"],
        ["I2", "pass"],
        ["I3", "pass"],
        ["I4", "pass"],
        ["D1", "pass"],
        ["D2", "pass"],
        ["D3", "pass"],
      ]);
      expect(code).toBe(0);
      const durable = report.durable;
      if (!durable) throw new Error("no durable part in the report");
      expect(report.uploads).toBe(11);
      // One start per event that was not stale; repeated Invokes (a lost answer) found their execution.
      expect(durable.starts.length).toBeGreaterThanOrEqual(3);
      expect(durable.invokes.started).toBe(durable.starts.length);
      expect(durable.invokes.conflicts).toBe(0);
      expect(durable.invokes.total).toBe(
        durable.invokes.started + durable.invokes.existing + durable.invokes.failedBefore,
      );
      expect(durable.starts.every((s) => s.subject?.startsWith("eonce-input/"))).toBe(true);
      expect(durable.executions?.map((e) => e.status)).toEqual(durable.starts.map(() => "SUCCEEDED"));
      // An older upload's execution: refused from its first step once a newer dispatch moved the fence, or from its
      // second when the move came between the two.
      for (const e of durable.executions ?? []) {
        const r = e.result as { skipped?: string; resize?: string; notify?: string };
        if (r.skipped !== undefined) expect(r.skipped).toBe("superseded");
        else expect([r.resize, ["processed", "stale"].includes(r.notify ?? "")]).toEqual(["processed", true]);
      }
      // What the executions left: each key's thumbnail index row and outbox row at its newest upload.
      const ddb = dynamoDBClient(inject("dynamodbEndpoint"));
      try {
        const rows = await scanTable(ddb, `dur-effects-${t}`);
        for (const key of ["a.txt", "b.txt", "c.txt"]) {
          const newest = normalizeSequencer(
            report.uploaded.filter((u) => u.key === key).at(-1)?.sequencer ?? "",
          );
          expect(rows.find((r) => r.pk === `eonce-input/${key}`)?.srcPos, key).toBe(newest);
          expect(rows.find((r) => r.pk === `notify#eonce-input/${key}`)?.lastPosition, key).toBe(newest);
        }
      } finally {
        ddb.destroy();
      }
    },
    240_000,
  );

  it("catches a dispatcher without positions starting older uploads after newer ones (D2 fails, exit 1), and failing executions (D3)", async () => {
    const { code, stdout, stderr } = await eonce([
      "run",
      "test/local/fixtures/durable-unordered.ts:handler",
      "--versions",
      manyVersions,
      "--state-table",
      `dur-unordered-${suffix()}`,
      "--reorder-window-ms",
      "1500",
      "--seed",
      "2",
      "--durable",
      "test/local/fixtures/durable-failing.ts:handler",
      "--json",
      ...endpoint(),
    ]);
    const report = parse({ stdout, stderr });
    const checks = Object.fromEntries((report.durable?.checks ?? []).map((c) => [c.id, c]));
    expect(checks.D1?.status).toBe("pass");
    expect(checks.D2?.status).toBe("fail");
    expect(checks.D2?.detail).toMatch(/violation\(s\), first: eonce-input\/\w\.txt: .* started after/);
    expect(checks.D3?.status).toBe("fail");
    expect(checks.D3?.detail).toMatch(/FAILED, Error: boom from the failing durable fixture/);
    // The guard's own invariants hold: the dispatcher is wrong for a durable workflow, not for the guard.
    expect(report.invariants.every((c) => c.status !== "fail")).toBe(true);
    expect(report.ok).toBe(false);
    expect(code).toBe(1);
  }, 240_000);

  it("catches a plain handler that starts an execution per delivery (D1 fails, exit 1)", async () => {
    const { code, stdout, stderr } = await eonce([
      "run",
      "test/local/fixtures/durable-unguarded.ts:handler",
      "--generate",
      "8",
      "--duplicate-rate",
      "0.5",
      "--seed",
      "1",
      "--json",
      ...endpoint(),
    ]);
    const report = parse({ stdout, stderr });
    const d1 = report.durable?.checks.find((c) => c.id === "D1");
    expect(d1?.status).toBe("fail");
    expect(d1?.detail).toMatch(/event\(s\) started more than one execution/);
    expect(report.durable?.starts.length).toBeGreaterThan(8);
    expect(code).toBe(1);
  }, 240_000);
});
