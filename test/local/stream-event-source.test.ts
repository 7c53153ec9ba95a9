import { randomUUID } from "node:crypto";
import { CreateTableCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  type KinesisClient,
  ListShardsCommand,
  PutRecordCommand,
  SplitShardCommand,
} from "@aws-sdk/client-kinesis";
import type { DynamoDBStreamEvent, KinesisStreamEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../../src/local/aws-local.js";
import { DynamoDBStreamReader } from "../../src/local/delivery/dynamodb-stream-reader.js";
import { KinesisReader } from "../../src/local/delivery/kinesis-reader.js";
import { type AnyLambdaHandler, LocalFunction } from "../../src/local/delivery/local-function.js";
import {
  StreamEventSource,
  type StreamEventSourceOptions,
} from "../../src/local/delivery/stream-event-source.js";
import type { StreamReader } from "../../src/local/delivery/stream-reader.js";
import { type LocalKinesisServer, startKinesisServer } from "../../src/local/emulators/kinesis-server.js";
import { createSimulation } from "../../src/sim/live/simulation.js";
import { localDynamoDB } from "../kit/index.js";

let kinesis: LocalKinesisServer;
let client: KinesisClient;

beforeAll(async () => {
  kinesis = await startKinesisServer();
  client = kinesis.client();
}, 60_000);

afterAll(async () => {
  client?.destroy();
  await kinesis?.stop();
});

async function createStream(shards: number): Promise<string> {
  const name = `s-${randomUUID().slice(0, 8)}`;
  await client.send(new CreateStreamCommand({ StreamName: name, ShardCount: shards }));
  await active(name);
  return name;
}

async function active(name: string): Promise<void> {
  for (;;) {
    const d = await client.send(new DescribeStreamSummaryCommand({ StreamName: name }));
    if (d.StreamDescriptionSummary?.StreamStatus === "ACTIVE") return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function put(name: string, key: string, data: unknown): Promise<string> {
  const out = await client.send(
    new PutRecordCommand({ StreamName: name, PartitionKey: key, Data: Buffer.from(JSON.stringify(data)) }),
  );
  return out.SequenceNumber ?? "";
}

/** Runs the stream through `handler` until every shard is drained; what the source discarded. */
async function drain(
  reader: StreamReader,
  handler: AnyLambdaHandler,
  options: StreamEventSourceOptions = {},
) {
  const sim = createSimulation(7);
  const fn = new LocalFunction({ name: "consumer", handler, timeoutMs: 5000 }, sim);
  const source = new StreamEventSource(fn, reader, { pollIntervalMs: 10, ...options }, sim);
  source.start();
  const deadline = Date.now() + 30_000;
  try {
    while (!(await source.drained())) {
      if (Date.now() > deadline) throw new Error("stream did not drain");
      await new Promise((r) => setTimeout(r, 30));
    }
    await sim.activity.idle();
  } finally {
    await source.stop();
    sim.sleeper.stop();
  }
  return { discarded: source.discarded, trace: sim.trace };
}

const data = (r: KinesisStreamEvent["Records"][number]) =>
  JSON.parse(Buffer.from(r.kinesis.data, "base64").toString()) as { n: number };

describe("stream event source on Kinesis (kinesis-local)", () => {
  it("listens on 127.0.0.1 only", () => {
    expect(kinesis.address).toBe("127.0.0.1");
    expect(kinesis.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("delivers each shard's records in order, in Lambda's Kinesis event shape, in batches of batchSize", async () => {
    const name = await createStream(1);
    for (let n = 0; n < 7; n++) await put(name, `k${n % 2}`, { n });
    const batches: KinesisStreamEvent[] = [];
    await drain(
      new KinesisReader(client, name, kinesis.streamArn(name)),
      async (event: KinesisStreamEvent) => {
        batches.push(event);
      },
      { batchSize: 3 },
    );
    expect(batches.map((b) => b.Records.length)).toEqual([3, 3, 1]);
    expect(batches.flatMap((b) => b.Records.map(data)).map((d) => d.n)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const first = batches[0]?.Records[0];
    expect(first?.eventSource).toBe("aws:kinesis");
    expect(first?.eventSourceARN).toBe(kinesis.streamArn(name));
    expect(first?.eventID).toBe(`shardId-000000000000:${first?.kinesis.sequenceNumber}`);
  });

  it("retries from the first reported failure: the records before it are not sent again", async () => {
    const name = await createStream(1);
    for (let n = 0; n < 5; n++) await put(name, "k", { n });
    const seen: number[][] = [];
    let failedOnce = false;
    await drain(
      new KinesisReader(client, name, kinesis.streamArn(name)),
      async (event: KinesisStreamEvent) => {
        seen.push(event.Records.map((r) => data(r).n));
        const third = event.Records.find((r) => data(r).n === 2);
        if (third && !failedOnce) {
          failedOnce = true;
          // Two failures listed: Lambda resumes from the lowest sequence number.
          const fourth = event.Records.find((r) => data(r).n === 3);
          return {
            batchItemFailures: [
              { itemIdentifier: fourth?.kinesis.sequenceNumber },
              { itemIdentifier: third.kinesis.sequenceNumber },
            ],
          };
        }
        return { batchItemFailures: [] };
      },
    );
    expect(seen).toEqual([
      [0, 1, 2, 3, 4],
      [2, 3, 4],
    ]);
  });

  it("bisects a batch whose invocation fails, then discards the poison record after its retries", async () => {
    const name = await createStream(1);
    for (let n = 0; n < 4; n++) await put(name, "k", { n });
    const seen: number[][] = [];
    const { discarded, trace } = await drain(
      new KinesisReader(client, name, kinesis.streamArn(name)),
      async (event: KinesisStreamEvent) => {
        const ns = event.Records.map((r) => data(r).n);
        seen.push(ns);
        if (ns.includes(1)) throw new Error("poison");
      },
      { maxRetryAttempts: 2 },
    );
    // 4 records fail, then 2 (bisected), then 1 (bisected), which fails past its retries and is discarded.
    expect(seen.slice(0, 3)).toEqual([[0, 1, 2, 3], [0, 1], [0]]);
    expect(discarded).toHaveLength(1);
    expect(discarded[0]).toMatchObject({ condition: "RetryAttemptsExhausted", batchSize: 1 });
    expect(seen.flat().filter((n) => n === 3).length).toBeGreaterThanOrEqual(2);
    expect(seen.at(-1)).toEqual([2, 3]);
    expect(trace.events.filter((e) => e.type === "dead-letter")).toHaveLength(1);
  });

  it("reads a split shard's parent to its end before its children", async () => {
    const name = await createStream(1);
    for (let n = 0; n < 3; n++) await put(name, `k${n}`, { n });
    const [parent] = (await client.send(new ListShardsCommand({ StreamName: name }))).Shards ?? [];
    await client.send(
      new SplitShardCommand({
        StreamName: name,
        ShardToSplit: parent?.ShardId,
        NewStartingHashKey: (BigInt(parent?.HashKeyRange?.EndingHashKey ?? "0") / 2n).toString(),
      }),
    );
    await active(name);
    for (let n = 3; n < 9; n++) await put(name, `k${n % 3}`, { n });
    const order: { shard: string; n: number }[] = [];
    await drain(
      new KinesisReader(client, name, kinesis.streamArn(name)),
      async (event: KinesisStreamEvent) => {
        for (const r of event.Records) order.push({ shard: r.eventID.split(":")[0] ?? "", n: data(r).n });
      },
    );
    const parentDone = order.findLastIndex((o) => o.shard === parent?.ShardId);
    const firstChild = order.findIndex((o) => o.shard !== parent?.ShardId);
    expect(parentDone).toBe(2);
    expect(firstChild).toBe(3);
    expect(order.map((o) => o.n).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("with a parallelization factor, a partition key's records keep their order", async () => {
    const name = await createStream(1);
    for (let n = 0; n < 24; n++) await put(name, `k${n % 4}`, { n });
    const byKey = new Map<string, number[]>();
    let inFlight = 0;
    let most = 0;
    await drain(
      new KinesisReader(client, name, kinesis.streamArn(name)),
      async (event: KinesisStreamEvent) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 20));
        for (const r of event.Records) {
          const list = byKey.get(r.kinesis.partitionKey) ?? [];
          list.push(data(r).n);
          byKey.set(r.kinesis.partitionKey, list);
        }
        inFlight--;
      },
      { batchSize: 2, parallelizationFactor: 4 },
    );
    for (const [key, ns] of byKey) {
      expect(ns, key).toEqual([...ns].sort((a, b) => a - b));
      expect(ns).toHaveLength(6);
    }
    expect(most).toBeGreaterThan(1);
  });
});

describe("stream event source on DynamoDB Streams (DynamoDB Local)", () => {
  it("delivers a table's changes in Lambda's DynamoDB Streams event shape", async () => {
    const dynamo = localDynamoDB();
    const table = `t-${randomUUID().slice(0, 8)}`;
    const created = await dynamo.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
        StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
      }),
    );
    for (let n = 0; n < 3; n++) {
      await dynamo.send(
        new PutItemCommand({ TableName: table, Item: { pk: { S: "a" }, n: { N: String(n) } } }),
      );
    }
    const streams = new DynamoDBStreamsClient({
      endpoint: inject("dynamodbEndpoint"),
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    const arn = created.TableDescription?.LatestStreamArn ?? "";
    const records: DynamoDBStreamEvent["Records"] = [];
    try {
      await drain(new DynamoDBStreamReader(streams, arn), async (event: DynamoDBStreamEvent) => {
        records.push(...event.Records);
      });
    } finally {
      streams.destroy();
      dynamo.destroy();
    }
    expect(records.map((r) => r.eventName)).toEqual(["INSERT", "MODIFY", "MODIFY"]);
    expect(records.map((r) => r.dynamodb?.NewImage?.n?.N)).toEqual(["0", "1", "2"]);
    expect(records[1]?.dynamodb?.OldImage?.n?.N).toBe("0");
    expect(records[0]?.eventSource).toBe("aws:dynamodb");
    expect(records[0]?.eventSourceARN).toBe(arn);
    expect(typeof records[0]?.dynamodb?.ApproximateCreationDateTime).toBe("number");
  });
});
