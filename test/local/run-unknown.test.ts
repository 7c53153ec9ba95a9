import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { RunReport } from "../../src/cli/run/run-handler.js";
import { TEST_VALKEY_URL } from "../../src/engines/valkey/client.js";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { scanTable } from "../../src/local/emulators/scan-table.js";
import { eonce } from "./cli-helpers.js";

/**
 * `eonce run` says `ok` only when the checks that matter ran and passed: a message-fed durable pipeline whose
 * checks could not be made is `unknown` (exit 3 under --strict), its double charges fail I1 once `--effects` counts
 * them, a run pointed at the wrong state (a Valkey key prefix the handler does not use) fails, and correct runs
 * still pass.
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
  Object.fromEntries([...r.invariants, ...(r.durable?.checks ?? [])].map((c) => [c.id, c]));

describe.concurrent("eonce run on Valkey: the state must hold the run's events", () => {
  const prefixes: string[] = [];
  afterAll(async () => {
    const client = new Redis(TEST_VALKEY_URL);
    try {
      for (const prefix of prefixes) {
        const keys = await client.keys(`${prefix}*`);
        if (keys.length) await client.del(...keys);
      }
    } finally {
      client.disconnect();
    }
  });

  /** The state-engines fixture on Valkey with its key prefix `handlerPrefix`; the run reads `readPrefix`. */
  async function run(handlerPrefix: string, readPrefix: string) {
    prefixes.push(handlerPrefix, readPrefix);
    const out = await eonce([
      "run",
      "test/local/fixtures/state-engines.ts:handler",
      "--generate",
      "3",
      "--reupload",
      "1",
      "--env",
      "FIXTURE_STORE=valkey",
      "--env",
      `FIXTURE_KEY_PREFIX=${handlerPrefix}`,
      "--env",
      "LEASE_MS=1000",
      "--state-store",
      "valkey",
      "--state-url",
      TEST_VALKEY_URL,
      "--key-prefix",
      readPrefix,
      "--json",
      ...endpoint(),
    ]);
    return { ...out, report: parse(out) };
  }

  it("a run pointed at another key prefix than the handler's fails I2 and I3, naming where it looked", async () => {
    const t = suffix();
    const { code, report, stderr } = await run(`run-h-${t}:`, `run-wrong-${t}:`);
    const { I2, I3 } = statuses(report);
    expect(I2?.status, stderr).toBe("fail");
    expect(I3?.status).toBe("fail");
    for (const check of [I2, I3])
      expect(check?.detail).toMatch(
        new RegExp(
          `^no state record of this run in valkey redis://\\S+ run-wrong-${t}:, though 4 event\\(s\\) processed: ` +
            "the run reads another place than the handler writes to",
        ),
      );
    expect(report.ok).toBe(false);
    expect(report.result).toBe("fail");
    expect(code).toBe(1);
  }, 240_000);

  it("the same run pointed at the handler's prefix: every check passes, result ok, exit 0", async () => {
    const t = suffix();
    const { code, report, stderr } = await run(`run-ok-${t}:`, `run-ok-${t}:`);
    expect(
      report.invariants.map((c) => [c.id, c.status]),
      stderr,
    ).toEqual([
      ["I1", "pass"],
      ["I2", "pass"],
      ["I3", "pass"],
      ["I4", "pass"],
    ]);
    expect(statuses(report).I2?.detail).toMatch(/^3 ordered subjects, each committed at its newest event/);
    expect(report.result).toBe("ok");
    expect(report.ok).toBe(true);
    expect(code).toBe(0);
  }, 240_000);
});

describe.concurrent("eonce run on a message-fed durable pipeline", () => {
  let dir: string;
  let orders: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "eonce-unknown-"));
    orders = join(dir, "orders.jsonl");
    const lines = ["o-1", "o-2", "o-3"].map((orderId) => JSON.stringify({ orderId, amountCents: 100 }));
    await writeFile(orders, `${lines.join("\n")}\n`);
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  /** test/local/fixtures/durable-orders.ts over SQS, every batch delivered twice; the rows it charged. */
  async function run(extra: string[], broken: boolean, env: NodeJS.ProcessEnv = {}) {
    const t = suffix();
    const charges = `unk-charges-${t}`;
    const out = await eonce(
      [
        "run",
        "test/local/fixtures/durable-orders.ts:handler",
        "--source",
        "sqs",
        "--messages",
        orders,
        "--durable",
        "test/local/fixtures/durable-orders.ts:workflow",
        "--table",
        `${charges}:pk`,
        "--env",
        `CHARGES_TABLE=${charges}`,
        ...(broken
          ? ["--env", "FIXTURE_BROKEN=unguarded"]
          : [
              "--table",
              `unk-effects-${t}:pk`,
              "--env",
              `EFFECTS_TABLE=unk-effects-${t}`,
              "--state-table",
              `unk-state-${t}`,
            ]),
        "--duplicate-rate",
        "1",
        "--seed",
        "1",
        "--json",
        ...extra.map((a) => a.replace("CHARGES", charges)),
        ...endpoint(),
      ],
      240_000,
      env,
    );
    const ddb = dynamoDBClient(inject("dynamodbEndpoint"));
    try {
      return { ...out, report: parse(out), rows: await scanTable(ddb, charges) };
    } finally {
      ddb.destroy();
    }
  }

  it("unguarded steps that double-charge, checks that cannot be made: result unknown, exit 3 (strict in CI)", async () => {
    const { code, report, rows, stderr } = await run([], true, { CI: "true" });
    // The pipeline did charge twice: every order was delivered twice, each delivery started its own execution.
    expect(rows.length, stderr).toBeGreaterThan(6);
    expect(report.ok).toBe(false);
    const checks = statuses(report);
    const notChecked = Object.values(checks)
      .filter((c) => c.status === "not checked")
      .map((c) => c.id);
    expect(notChecked).toEqual(["I1", "I3", "D1", "D2"]);
    expect(checks.I2?.status).toBe("n/a");
    expect(report.result).toBe("unknown");
    expect(code).toBe(3);
  }, 240_000);

  it("the same run with --effects counting rows per (order, step): the double charges fail I1, exit 1", async () => {
    const { code, report, stderr } = await run(["--effects", "CHARGES:orderId:step"], true);
    const { I1 } = statuses(report);
    expect(I1?.status, stderr).toBe("fail");
    expect(I1?.detail).toMatch(/^3 event\(s\) with more than one row for one step in unk-charges-\w+ /);
    expect(I1?.detail).toMatch(/rows for 3 events \(counted per step\)/);
    expect(report.result).toBe("fail");
    expect(code).toBe(1);
  }, 240_000);

  it("the dispatcher and guarded steps: one row per order and step, every check that applies passes, ok", async () => {
    const { code, report, rows, stderr } = await run(
      ["--effects", "CHARGES:orderId:step", "--strict"],
      false,
    );
    expect(
      [...report.invariants, ...(report.durable?.checks ?? [])].map((c) => [c.id, c.status]),
      stderr,
    ).toEqual([
      ["I1", "pass"],
      ["I2", "n/a"],
      ["I3", "pass"],
      ["I4", "pass"],
      ["D1", "pass"],
      ["D2", "n/a"],
      ["D3", "pass"],
    ]);
    expect(rows.map((r) => `${r.orderId} ${r.step}`).sort()).toEqual([
      "o-1 charge",
      "o-1 receipt",
      "o-2 charge",
      "o-2 receipt",
      "o-3 charge",
      "o-3 receipt",
    ]);
    expect(report.result).toBe("ok");
    expect(code).toBe(0);
  }, 240_000);
});
