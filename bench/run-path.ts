/**
 * Where the time of `guard.run` goes on DynamoDB Local: each request of the run path alone, at the same concurrency
 * as the throughput bench, side by side with the raw conditional PutItem, interleaved round by round:
 *
 * - `raw put`: one conditional PutItem (attribute_not_exists), the ceiling of bench/main.ts;
 * - `claim`: the store's claim alone (one conditional UpdateItem), on fresh keys;
 * - `commit`: the commit alone, nothing folded (one conditional UpdateItem), on keys claimed before the round;
 * - `commit + effect`: the commit with the fenced effect folded in (TransactWriteItems of two items);
 * - `run`: the whole `guard.run` with the effect folded into the commit (claim, handler, commit), as `ours`.
 *
 * With the server saturated, an event's cost is the sum of its requests' costs, so `run` can reach at most
 * 1 / (1/claim + 1/(commit + effect)) of the raw put's rate: the floor this prints beside the measured `run`.
 *
 *   tsx bench/run-path.ts [--workers 16] [--events 2000] [--rounds 3] [--endpoint <url>]
 */
import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { Command } from "commander";
import { createGuard } from "../src/core/guard.js";
import type { ClaimRequest } from "../src/core/state.js";
import { createStateTable } from "../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../src/engines/dynamodb/store.js";
import { dynamoDBClient, startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { onWorkers, workerIds } from "./on-workers.js";
import { median, round } from "./stats.js";
import { createTable, dropTables } from "./tables.js";

const opts = new Command()
  .option("--workers <n>", "concurrent requests", "16")
  .option("--events <n>", "requests per step and round", "2000")
  .option("--rounds <n>", "interleaved rounds", "3")
  .option("--endpoint <url>", "use this DynamoDB Local instead of starting one")
  .parse()
  .opts<{ workers: string; events: string; rounds: string; endpoint?: string }>();
const workers = Number(opts.workers);
const events = Number(opts.events);

/** Runs `op(i)` for i < events, `workers` at a time; events per second. */
async function rate(op: (i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await onWorkers(workerIds(workers), events, (_, i) => op(i));
  return events / ((performance.now() - started) / 1000);
}

const LEASE_MS = 30_000;

function claimRequest(key: string, fence: number): ClaimRequest {
  const nowMs = Date.now();
  return {
    key,
    position: "00000000000000000001",
    identity: `${key}#1`,
    nowMs,
    leaseUntilMs: nowMs + LEASE_MS,
    expiresAtSeconds: Math.ceil((nowMs + 86_400_000) / 1000),
    supersede: false,
    fence,
    token: randomUUID(),
    leaseGraceMs: 1000,
  };
}

/** One round of every step on fresh tables; events per second per step. */
async function roundOf(client: DynamoDBClient): Promise<Record<string, number>> {
  const tag = randomUUID().slice(0, 8);
  const [raw, state, out] = [`rp-raw-${tag}`, `rp-state-${tag}`, `rp-out-${tag}`];
  await createTable(client, raw);
  await createTable(client, out);
  await createStateTable(client, { tableName: state });
  const store = new DynamoDBStore({ client, tableName: state });
  const sink = new DynamoDBFencedSink({ client, tableName: out });
  const guard = createGuard({ store });
  const fence = Date.now();
  const claimed = (prefix: string) => async (i: number) => store.claim(claimRequest(`${prefix}${i}`, fence));
  const commit = (prefix: string, folded: boolean) => (i: number) =>
    store.commit({
      key: `${prefix}${i}`,
      fence,
      identity: `${prefix}${i}#1`,
      expiresAtSeconds: Math.ceil(Date.now() / 1000) + 86_400,
      ...(folded
        ? {
            writes: [
              sink.atomicPut({ position: "00000000000000000001", fence }, { pk: `${prefix}${i}`, v: 1 }),
            ],
          }
        : {}),
    });
  try {
    const out: Record<string, number> = {};
    out["raw put"] = await rate((i) =>
      client.send(
        new PutItemCommand({
          TableName: raw,
          Item: { pk: { S: `r${i}` }, v: { N: "1" } },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      ),
    );
    out.claim = await rate(claimed("c"));
    // The commits' claims are made before their step, unmeasured.
    await rate(claimed("k"));
    await rate(claimed("t"));
    out.commit = await rate(commit("k", false));
    out["commit + effect"] = await rate(commit("t", true));
    out.run = await rate((i) =>
      guard.run({ subject: `g${i}`, identity: `g${i}#1`, position: "00000000000000000001" }, async (ctx) =>
        sink.putAtCommit(ctx, { pk: `g${i}`, v: 1 }),
      ),
    );
    return out;
  } finally {
    await dropTables(client, [raw, state, out]);
  }
}

async function main(): Promise<void> {
  const local = opts.endpoint ? undefined : await startDynamoDBLocal();
  const client = dynamoDBClient(opts.endpoint ?? (local?.endpoint as string));
  try {
    const rounds: Record<string, number>[] = [];
    for (let r = 0; r < Number(opts.rounds); r++) rounds.push(await roundOf(client));
    const ratio = (step: string) => median(rounds.map((x) => (x[step] as number) / (x["raw put"] as number)));
    console.log(`${workers} workers, ${events} requests per step, median of ${rounds.length} rounds:`);
    for (const step of Object.keys(rounds[0] ?? {}))
      console.log(
        `  ${step}: ${round(median(rounds.map((x) => x[step] as number)), 0)}/s = ${round(100 * ratio(step), 1)}% of raw put`,
      );
    const floor = median(
      rounds.map(
        (x) =>
          1 /
          ((x["raw put"] as number) / (x.claim as number) +
            (x["raw put"] as number) / (x["commit + effect"] as number)),
      ),
    );
    console.log(
      `  run's ceiling from its requests (1 / (1/claim + 1/(commit + effect))): ${round(100 * floor, 1)}%`,
    );
  } finally {
    client.destroy();
    await local?.stop();
  }
}

await main();
