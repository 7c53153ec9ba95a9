import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RunReport, runHandler } from "../../src/cli/run/run-handler.js";
import { OptionsError } from "../../src/core/errors.js";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { scanTable } from "../../src/local/emulators/scan-table.js";
import { eonce } from "./cli-helpers.js";

/**
 * `eonce run` tells the truth: failures are reported as failures (with the handler's own error), only what
 * reached the DLQ is dead-lettered, SQS runs get per-event outcomes, start-up problems end the command at
 * once with one line, and application messages can be replayed through SQS, SNS-in-SQS and EventBridge.
 */
const suffix = () => randomUUID().slice(0, 8);
const endpoint = () => ["--dynamodb-endpoint", inject("dynamodbEndpoint")];
const parse = (stdout: string): RunReport =>
  JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as RunReport;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "eonce-truth-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `eonce <args>` with the environment given (not the test's), for PATH without java. */
function eonceWithEnv(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000) {
  return new Promise<{ code: number | null; stderr: string; ms: number }>((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      env,
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`eonce ${args.join(" ")} still running after ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    // "close", not "exit": stderr is whole only once the pipe is drained.
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: Date.now() - started });
    });
  });
}

// Side by side: each test spawns its own `eonce run` (its own servers and tables).
describe.concurrent("eonce run reports failures as failures", () => {
  it("a handler that always throws: its error and line without --logs, every event lost, exit 1", async () => {
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/throwing.ts:handler",
      "--generate",
      "3",
      ...endpoint(),
    ]);
    expect(stdout).toMatch(
      /errors\s+9× Error: boom from the throwing fixture \(at test\/local\/fixtures\/throwing\.ts:3:\d+\)/,
    );
    expect(stdout).toMatch(/I4 nothing lost\s+fail\s+.*3 lost/);
    expect(stdout).toMatch(/outcomes\s+failed-will-retry 6, failed 3\n/);
    expect(stdout).toMatch(/result\s+FAIL: 3\/3 events never succeeded \(3 lost\)/);
    expect(code).toBe(1);
  }, 120_000);

  it("a wrapper fed the wrong trigger is named, without --logs", async () => {
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/wrong-trigger.ts:handler",
      "--generate",
      "2",
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    expect(report.warnings[0]).toMatch(
      /wrapper does not fit --source direct: sqsHandler got a direct S3\/EventBridge invocation; use s3Handler/,
    );
    expect(report.unsuccessful).toEqual({ total: 2, deadLettered: 0, lost: 2 });
    expect(code).toBe(1);
  }, 120_000);

  it("a guarded handler that always throws: handler failures with its own error, not an ordering failure", async () => {
    const t = suffix();
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/guarded-throwing.ts:handler",
      "--generate",
      "3",
      "--state-table",
      `gt-state-${t}`,
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    expect(report.errors[0]).toMatchObject({
      error: "TypeError: cannot read the invoice total",
      at: expect.stringMatching(/^test\/local\/fixtures\/guarded-throwing\.ts:10:\d+$/),
    });
    const status = Object.fromEntries(report.invariants.map((c) => [c.id, c.status]));
    expect(status.I2).toBe("pass");
    expect(status.I4).toBe("fail");
    expect(code).toBe(1);
  }, 120_000);
});

describe.concurrent("eonce run --messages", () => {
  async function replay(source: string, lines: string[], extra: string[] = []) {
    const t = suffix();
    const file = join(dir, `messages-${t}.jsonl`);
    await writeFile(file, `${lines.join("\n")}\n`);
    const { code, stdout, stderr } = await eonce([
      "run",
      "test/local/fixtures/messages-handler.ts:handler",
      "--source",
      source,
      "--messages",
      file,
      "--table",
      `msg-${t}`,
      "--env",
      `MESSAGES_TABLE=msg-${t}`,
      "--state-table",
      `msg-state-${t}`,
      "--json",
      ...extra,
      ...endpoint(),
    ]);
    const rows = await scanTable(dynamoDBClient(inject("dynamodbEndpoint")), `msg-${t}`);
    return { code, stderr, report: parse(stdout), rows };
  }

  it("through a FIFO queue with group and dedup ids (a repeated dedup id is one event), with duplicates", async () => {
    const { code, report, rows } = await replay(
      "sqs",
      [
        JSON.stringify({ body: { id: "a" }, groupId: "g1", dedupId: "d-a" }),
        JSON.stringify({ body: { id: "b" }, groupId: "g1", dedupId: "d-b", attributes: { kind: "x" } }),
        JSON.stringify({ body: { id: "a" }, groupId: "g1", dedupId: "d-a" }),
        JSON.stringify({ body: { id: "c" }, groupId: "g2" }),
      ],
      ["--fifo", "--duplicate-rate", "0.5", "--seed", "3"],
    );
    expect(report).toMatchObject({ messages: 4, events: 3 });
    expect(report.outcomes.processed).toBe(3);
    expect(report.unsuccessful.total).toBe(0);
    expect(rows.map((r) => [r.id, r.group, r.envelope]).sort()).toEqual([
      ["a", "g1", "sqs"],
      ["b", "g1", "sqs"],
      ["c", "g2", "sqs"],
    ]);
    expect(JSON.parse(String(rows.find((r) => r.id === "b")?.attributes))).toEqual({ kind: "x" });
    expect(code).toBe(0);
  }, 180_000);

  it("through SNS into SQS", async () => {
    const { code, report, rows } = await replay("sns-sqs", ['{"id":"s1"}', '{"id":"s2"}']);
    expect(report).toMatchObject({ source: "sns-sqs", messages: 2, events: 2 });
    expect(report.outcomes.processed).toBe(2);
    expect(rows.map((r) => r.sns)).toEqual([true, true]);
    expect(code).toBe(0);
  }, 180_000);

  it("through EventBridge, with duplicates and failures after the effect", async () => {
    const { code, report, rows } = await replay(
      "eventbridge",
      ['{"id":"e1"}', '{"id":"e2"}', '{"id":"e3"}'],
      ["--duplicate-rate", "0.6", "--fail-after-rate", "0.3", "--seed", "2"],
    );
    expect(report).toMatchObject({ source: "eventbridge", messages: 3, events: 3 });
    // A run that failed after its effect counts as failed-will-retry; its retry finds a duplicate.
    expect(report.outcomes.duplicate).toBeGreaterThan(0);
    expect(report.outcomes["failed-will-retry"]).toBeGreaterThan(0);
    expect(report.unsuccessful.total).toBe(0);
    expect(rows.map((r) => r.id).sort()).toEqual(["e1", "e2", "e3"]);
    expect(rows.every((r) => r.envelope === "eventbridge")).toBe(true);
    expect(code).toBe(0);
  }, 180_000);

  it("a wrapper that reports every message failed: I1 says nothing was processed instead of passing", async () => {
    const t = suffix();
    const file = join(dir, `failing-${t}.jsonl`);
    await writeFile(file, '{"id":"f1"}\n{"id":"f2"}\n');
    // MESSAGES_TABLE does not exist: every run's write fails, the wrapper reports each message failed.
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/messages-handler.ts:handler",
      "--source",
      "sqs",
      "--messages",
      file,
      "--env",
      `MESSAGES_TABLE=none-${t}`,
      "--state-table",
      `failing-state-${t}`,
      "--visibility-timeout-s",
      "1",
      "--max-receive-count",
      "1",
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    expect(report.outcomes.processed).toBe(0);
    expect(report.invariants[0]).toEqual({
      id: "I1",
      title: "exactly-once effect",
      status: "not checked",
      detail: "no event was processed: none of the 2 events was reported processed",
    });
    expect(code).toBe(1);
  }, 180_000);

  it("rejects a bad line eagerly, naming the file and line", async () => {
    const file = join(dir, "bad.jsonl");
    await writeFile(file, '{"id":1}\n{"body":"x","group":"g"}\n');
    const { code, stderr } = await eonce([
      "run",
      "test/local/fixtures/messages-handler.ts:handler",
      "--source",
      "sqs",
      "--messages",
      file,
      ...endpoint(),
    ]);
    expect(stderr.trim()).toBe(
      `eonce run: ${file}:2: unknown key "group" (allowed: body, groupId, dedupId, attributes, partitionKey, op)`,
    );
    expect(code).toBe(2);
  }, 60_000);
});

describe.concurrent("eonce run start-up errors: one line, before any server starts, and the process exits", () => {
  it("a missing --from folder", async () => {
    const { code, stderr } = await eonce([
      "run",
      "test/local/fixtures/throwing.ts",
      "--from",
      join(dir, "nope"),
    ]);
    expect(stderr.trim()).toBe(`eonce run: --from: no such folder: ${join(dir, "nope")}`);
    expect(code).toBe(2);
  }, 60_000);

  it("a handler with a syntax error: its file and line", async () => {
    const file = join(dir, "broken.mjs");
    await writeFile(file, "export const handler = async () => {\n  const x = ;\n};\n");
    const { code, stderr } = await eonce(["run", `${file}:handler`, ...endpoint()]);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(
      /cannot load .*broken\.mjs: SyntaxError: Unexpected token ';' \(at .*broken\.mjs:2\)/,
    );
    expect(code).toBe(2);
  }, 60_000);

  it("no Java on the PATH: names Java 17 and exits instead of hanging", async () => {
    // A PATH with node alone (node's own folder may hold java too).
    const bin = join(dir, "bin");
    await mkdir(bin, { recursive: true });
    await symlink(process.execPath, join(bin, "node")).catch(() => undefined);
    const env = { ...process.env, PATH: bin, NO_COLOR: "1" };
    const { code, stderr } = await eonceWithEnv(
      ["run", "test/local/fixtures/throwing.ts:handler", "--generate", "1"],
      env,
    );
    expect(stderr.trim()).toMatch(
      /^eonce run: DynamoDB Local needs Java 17 or later, and "java" was not found/,
    );
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(code).toBe(2);
  }, 90_000);

  it("eonce demo too: no Java on the PATH is one line and exit 2", async () => {
    const bin = join(dir, "bin-demo");
    await mkdir(bin, { recursive: true });
    await symlink(process.execPath, join(bin, "node")).catch(() => undefined);
    const { code, stderr } = await eonceWithEnv(["demo", "--scenario", "records"], {
      ...process.env,
      PATH: bin,
      NO_COLOR: "1",
    });
    expect(stderr.trim()).toMatch(/^eonce demo: DynamoDB Local needs Java 17 or later/);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(code).toBe(2);
  }, 90_000);

  it("runHandler rejects unknown options and ill-fitting sources before reading anything", async () => {
    const base = { handler: "test/local/fixtures/ok.ts:handler", source: "sqs" as const };
    await expect(runHandler({ ...base, batchsize: 3 } as never)).rejects.toThrow(
      /eonce run: unknown option "batchsize"/,
    );
    await expect(runHandler({ ...base, source: "direct", messages: "m.jsonl" })).rejects.toThrow(
      OptionsError,
    );
    await expect(runHandler({ ...base, source: "sns-sqs", generate: 2 })).rejects.toThrow(
      /replays --messages/,
    );
    await expect(runHandler({ ...base, faults: { slowRatio: 1 } as never })).rejects.toThrow(
      /unknown option/,
    );
    // The state's connection is checked as eonce state checks it, with eonce run's flag names.
    await expect(runHandler({ ...base, stateTable: "s", databaseUrl: "postgres://x" })).rejects.toThrow(
      "--database-url is not for --state-store dynamodb",
    );
    await expect(runHandler({ ...base, stateStore: "sqlite" })).rejects.toThrow(
      "--state-store sqlite needs --state-file <path>",
    );
    await expect(runHandler({ ...base, stateStore: "postgres", inline: true })).rejects.toThrow(
      "--state-store postgres --inline needs --state-table <name>",
    );
    // The deprecated name: the engine with --inline.
    await expect(runHandler({ ...base, stateStore: "postgres-inline" })).rejects.toThrow(
      "--state-store postgres --inline needs --state-table <name>",
    );
    await expect(runHandler({ ...base, stateStore: "valkey", inline: true })).rejects.toThrow(
      "--inline is not for --state-store valkey",
    );
    await expect(
      runHandler({
        ...base,
        stateStore: "postgres",
        databaseUrl: "postgres://x",
        env: { DATABASE_URL: "y" },
      }),
    ).rejects.toThrow("--database-url sets the handler's DATABASE_URL: not with --env DATABASE_URL");
  });
});

// Last, after the concurrent suites above (consecutive concurrent suites run side by side): its heartbeat test runs
// alone.
describe("eonce run over SQS", () => {
  // The two DLQ tests side by side; the heartbeat test (timing: 1 s ticks against a 2 s timeout) alone after them.
  it.concurrent("counts dead-lettered only what reached the DLQ; a failed duplicate of a delivered message is just failed", async () => {
    // Every batch is delivered twice and half the runs fail: some copy fails while its twin succeeded.
    // With 1000 receives allowed nothing can reach the DLQ.
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/ok.ts:handler",
      "--source",
      "sqs",
      "--generate",
      "12",
      "--batch-size",
      "1",
      "--visibility-timeout-s",
      "1",
      "--max-receive-count",
      "1000",
      "--duplicate-rate",
      "1",
      "--fail-before-rate",
      "0.5",
      // A plain handler without state: I1–I3 cannot be checked, the result is unknown; exit 0 without --strict.
      "--no-strict",
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    expect(report.outcomes["dead-lettered"]).toBe(0);
    expect(report.outcomes.failed).toBeGreaterThan(0);
    expect(report.unsuccessful.total).toBe(0);
    expect(report.result).toBe("unknown");
    expect(code).toBe(0);
  }, 180_000);

  it.concurrent("reads the DLQ: messages that exhausted their receives are dead-lettered, and the run fails", async () => {
    const { code, stdout } = await eonce([
      "run",
      "test/local/fixtures/throwing.ts:handler",
      "--source",
      "sqs",
      "--generate",
      "2",
      "--visibility-timeout-s",
      "1",
      "--max-receive-count",
      "2",
      "--json",
      ...endpoint(),
    ]);
    const report = parse(stdout);
    expect(report.outcomes["dead-lettered"]).toBe(2);
    expect(report.unsuccessful).toEqual({ total: 2, deadLettered: 2, lost: 0 });
    expect(report.errors[0]?.error).toBe("Error: boom from the throwing fixture");
    expect(code).toBe(1);
  }, 180_000);

  it("replays orders through SQS: per-event outcomes, and the heartbeat keeps slow runs from redelivery", async () => {
    const t = suffix();
    const file = join(dir, `orders-${t}.jsonl`);
    const orders = Array.from({ length: 4 }, (_, i) =>
      JSON.stringify({ orderId: `o-${i}`, customerId: "c-1", amountCents: 100 + i }),
    );
    // A plain body, and one in the object form with message attributes.
    await writeFile(
      file,
      `${orders.slice(0, 3).join("\n")}\n\n${JSON.stringify({ body: JSON.parse(orders[3] ?? "{}"), attributes: { tenant: "t1", n: 2 } })}\n`,
    );
    const { code, stdout, stderr } = await eonce([
      "run",
      "examples/orders/lambda.ts:handler",
      "--source",
      "sqs",
      "--messages",
      file,
      "--table",
      `charges-${t}:chargeId`,
      "--env",
      `CHARGES_TABLE=charges-${t}`,
      "--state-table",
      `orders-state-${t}`,
      "--env",
      "LEASE_MS=8000",
      // Runs last 3 s at the fault point, past the queue's 2 s: only the heartbeat keeps them hidden.
      "--visibility-timeout-s",
      "2",
      "--env",
      "HEARTBEAT_VISIBILITY_S=3",
      "--env",
      "HEARTBEAT_INTERVAL_S=1",
      "--slow-rate",
      "1",
      "--slow-ms",
      "3000",
      // One message a batch: a message done early in a batch is not extended while the rest runs.
      "--batch-size",
      "1",
      "--timeout-ms",
      "8000",
      "--json",
      ...endpoint(),
    ]);
    expect(stderr).not.toMatch(/ENOTFOUND|Warning/);
    const report = parse(stdout);
    expect(report).toMatchObject({ source: "sqs", messages: 4, events: 4, deliveries: 4 });
    expect(report.outcomes.processed).toBe(4);
    expect(report.outcomes.acknowledged).toBe(0);
    expect(report.warnings).toEqual([]);
    const charges = await scanTable(dynamoDBClient(inject("dynamodbEndpoint")), `charges-${t}`);
    expect(charges).toHaveLength(4);
    expect(code).toBe(0);
  }, 180_000);
});
