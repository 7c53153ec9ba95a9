import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { RunReport } from "../../src/cli/run/run-handler.js";
import { eonce } from "./cli-helpers.js";

/**
 * `eonce run --source kinesis | dynamodb-streams` end to end on the local runtime (kinesis-local, DynamoDB Local's
 * streams, Lambda's stream event source mapping), three seeds each: the unguarded consumer (stream-naive.ts) writes
 * a row twice when Lambda retries a batch from its first record or a producer retries a put, counted from the table
 * (I1 fails); the guarded one (stream-guarded.ts) is exact. Each run is its own `eonce run` process (a fixture
 * reads its tables' names from the environment when it loads), sharing the suite's DynamoDB Local.
 */
const SEEDS = [1, 2, 3];
let dir: string;
let kinesisMessages: string;
let tableMessages: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "eonce-streams-"));
  kinesisMessages = join(dir, "orders.jsonl");
  // 12 orders of 3 customers (the partition keys).
  await writeFile(
    kinesisMessages,
    `${Array.from({ length: 12 }, (_, i) => JSON.stringify({ body: { id: `o${i}` }, partitionKey: `c${i % 3}` })).join("\n")}\n`,
  );
  tableMessages = join(dir, "items.jsonl");
  // 4 items, each written three times (a change each), then one of them deleted.
  const lines = [];
  for (let round = 0; round < 3; round++)
    for (let item = 0; item < 4; item++)
      lines.push(JSON.stringify({ body: { pk: `item${item}`, id: `item${item}-v${round}`, v: round } }));
  lines.push(JSON.stringify({ body: { pk: "item0", id: "item0-gone" }, op: "delete" }));
  await writeFile(tableMessages, `${lines.join("\n")}\n`);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function run(
  source: "kinesis" | "dynamodb-streams",
  guarded: boolean,
  seed: number,
): Promise<RunReport> {
  const t = randomUUID().slice(0, 8);
  const fixture = guarded ? "stream-guarded.ts" : "stream-naive.ts";
  const exported = guarded ? (source === "kinesis" ? "kinesis" : "dynamodbStreams") : "handler";
  const { stdout, stderr } = await eonce([
    "run",
    `test/local/fixtures/${fixture}:${exported}`,
    ...["--source", source, "--messages", source === "kinesis" ? kinesisMessages : tableMessages],
    ...["--table", `effects-${t}`, "--env", `EFFECTS_TABLE=effects-${t}`, "--effects", `effects-${t}:id`],
    ...(guarded ? ["--state-table", `state-${t}`] : []),
    ...(source === "kinesis"
      ? ["--shards", "2", "--split-after", "5", "--producer-duplicate-rate", "0.3"]
      : ["--stream-table", `items-${t}`]),
    ...["--batch-size", "3", "--seed", String(seed), "--timeout-ms", "2000"],
    ...["--fail-after-rate", "0.5", "--duplicate-rate", "0.3"],
    ...["--dynamodb-endpoint", inject("dynamodbEndpoint"), "--json", "--no-strict"],
  ]);
  const line = stdout.trim().split("\n").at(-1) ?? "";
  if (!line.startsWith("{")) throw new Error(`eonce run printed no report: ${stderr}`);
  return JSON.parse(line) as RunReport;
}

const check = (r: RunReport, id: string) => r.invariants.find((i) => i.id === id);

describe.concurrent.each(["kinesis", "dynamodb-streams"] as const)("eonce run --source %s", (source) => {
  it.each(SEEDS)(
    "seed %i: unguarded, a retried batch or a producer's retry writes rows twice (I1 fails)",
    async (seed) => {
      const r = await run(source, false, seed);
      expect(check(r, "I1")?.status, JSON.stringify(check(r, "I1"))).toBe("fail");
      expect(check(r, "I4")?.status).toBe("pass");
      expect(r.deliveries).toBeGreaterThan(r.events);
    },
    120_000,
  );

  it.each(SEEDS)(
    "seed %i: guarded, every event's row exactly once, nothing held, nothing lost",
    async (seed) => {
      const r = await run(source, true, seed);
      const summary = JSON.stringify(r.invariants);
      for (const id of ["I1", "I3", "I4"]) expect(check(r, id)?.status, summary).toBe("pass");
      expect(r.ok, summary).toBe(true);
      expect(r.deliveries).toBeGreaterThan(r.events);
    },
    120_000,
  );
});
