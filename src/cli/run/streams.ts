import { CreateTableCommand, DeleteItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  type KinesisClient,
  ListShardsCommand,
  PutRecordCommand,
  SplitShardCommand,
} from "@aws-sdk/client-kinesis";
import { marshall } from "@aws-sdk/util-dynamodb";
import { canonicalJson } from "../../durable/payload.js";
import type { LocalFunction } from "../../local/delivery/local-function.js";
import type { StreamReader } from "../../local/delivery/stream-reader.js";
import type { LocalRuntime } from "../../local/runtime.js";
import { createPrng } from "../../sim/prng.js";
import type { ReplayMessage } from "./messages.js";
import { streamItem } from "./messages.js";
import type { ResolvedRunOptions } from "./options.js";

/**
 * `eonce run --source kinesis | dynamodb-streams`: the stream is made, read by Lambda's stream event source mapping
 * (src/local/delivery/stream-event-source.ts) with the run's settings, and fed the messages: Kinesis records (a
 * producer's retries and a shard split mid-run among them), or writes to a table whose stream is read.
 */

/** The Kinesis stream of a run. */
export const RUN_STREAM = "eonce-input-stream";

/** A stream wired to the function: its reader, and (DynamoDB Streams) the table behind it. */
export interface StreamWiring {
  reader: StreamReader;
}

/** Creates the stream (or the table and its stream) and starts its event source mapping for `fn`. */
export async function wireStream(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  fn: LocalFunction,
): Promise<StreamWiring> {
  let reader: StreamReader;
  if (o.source === "kinesis") {
    const kinesis = runtime.kinesisClient<KinesisClient>();
    await kinesis.send(new CreateStreamCommand({ StreamName: RUN_STREAM, ShardCount: o.shards }));
    await streamActive(runtime);
    reader = await runtime.kinesisReader(RUN_STREAM);
  } else {
    const created = await runtime.dynamodbClient().send(
      new CreateTableCommand({
        TableName: o.streamTable,
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
        StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
      }),
    );
    reader = await runtime.dynamodbStreamReader(created.TableDescription?.LatestStreamArn ?? "");
  }
  runtime.streamEventSource(fn, reader, {
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    parallelizationFactor: o.parallelizationFactor,
    bisectBatchOnError: !o.wholeBatchRetries,
    maxRetryAttempts: o.maxRetryAttempts,
    maxRecordAgeMs: o.maxRecordAgeMs,
    faults: o.faults,
  });
  return { reader };
}

async function streamActive(runtime: LocalRuntime): Promise<void> {
  for (;;) {
    const out = await runtime
      .kinesisClient<KinesisClient>()
      .send(new DescribeStreamSummaryCommand({ StreamName: RUN_STREAM }));
    if (out.StreamDescriptionSummary?.StreamStatus === "ACTIVE") return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Puts the messages as Kinesis records: each with its partition key, a share of them twice (a producer retrying a
 * PutRecord whose answer was lost: the same data under a new sequence number), the first shard split after
 * `splitAfter` of them. Returns each record's sequence number → its message's label.
 */
export async function feedKinesis(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  messages: readonly ReplayMessage[],
): Promise<Map<string, string>> {
  const kinesis = runtime.kinesisClient<KinesisClient>();
  const producer = createPrng(o.seed).fork("producer");
  const sent = new Map<string, string>();
  for (const [i, m] of messages.entries()) {
    if (o.splitAfter !== undefined && i === o.splitAfter) await splitFirstShard(runtime);
    const copies = producer.chance(o.producerDuplicateRate) ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      const out = await kinesis.send(
        new PutRecordCommand({
          StreamName: RUN_STREAM,
          PartitionKey: m.partitionKey ?? m.label,
          Data: Buffer.from(m.body),
        }),
      );
      if (out.SequenceNumber) sent.set(out.SequenceNumber, m.label);
    }
  }
  return sent;
}

/** Splits the first open shard in the middle of its hash key range. */
async function splitFirstShard(runtime: LocalRuntime): Promise<void> {
  const kinesis = runtime.kinesisClient<KinesisClient>();
  const shards = (await kinesis.send(new ListShardsCommand({ StreamName: RUN_STREAM }))).Shards ?? [];
  const open = shards.find((s) => !s.SequenceNumberRange?.EndingSequenceNumber);
  if (!open?.HashKeyRange?.StartingHashKey || !open.HashKeyRange.EndingHashKey) return;
  const start = BigInt(open.HashKeyRange.StartingHashKey);
  const end = BigInt(open.HashKeyRange.EndingHashKey);
  await kinesis.send(
    new SplitShardCommand({
      StreamName: RUN_STREAM,
      ShardToSplit: open.ShardId,
      NewStartingHashKey: ((start + end) / 2n + 1n).toString(),
    }),
  );
  await streamActive(runtime);
}

/**
 * Writes the messages to the stream's table, in order: `put` the body as the item, `delete` the item of its `pk`.
 * DynamoDB writes a stream record only for a write that changes the item, so the labels are matched to the records
 * afterwards (`labelStreamRecords`): returned here, each write that changes its item, in order per item.
 */
export async function feedTable(
  runtime: LocalRuntime,
  o: ResolvedRunOptions,
  messages: readonly ReplayMessage[],
): Promise<Map<string, string[]>> {
  const ddb = runtime.dynamodbClient();
  const items = new Map<string, string | undefined>();
  const changes = new Map<string, string[]>();
  for (const m of messages) {
    const item = streamItem(m);
    const before = items.get(item.pk);
    const after = m.op === "delete" ? undefined : canonicalJson(item);
    if (m.op === "delete") {
      await ddb.send(new DeleteItemCommand({ TableName: o.streamTable, Key: marshall({ pk: item.pk }) }));
    } else {
      await ddb.send(new PutItemCommand({ TableName: o.streamTable, Item: marshall(item) }));
    }
    items.set(item.pk, after);
    if (before !== after) changes.set(item.pk, [...(changes.get(item.pk) ?? []), m.label]);
  }
  return changes;
}

/** Reads the whole stream and gives each record's sequence number the label of the write that made it. */
export async function labelStreamRecords(
  reader: StreamReader,
  changes: ReadonlyMap<string, readonly string[]>,
): Promise<Map<string, string>> {
  const sent = new Map<string, string>();
  const seen = new Map<string, number>();
  for (const shard of await reader.listShards()) {
    let after: string | undefined;
    for (;;) {
      const read = await reader.read(shard.shardId, after, 1000);
      for (const r of read.records) {
        const pk = (r.lambdaRecord as { dynamodb?: { Keys?: { pk?: { S?: string } } } }).dynamodb?.Keys?.pk
          ?.S;
        if (pk === undefined) continue;
        const n = seen.get(pk) ?? 0;
        seen.set(pk, n + 1);
        const label = changes.get(pk)?.[n];
        if (label !== undefined) sent.set(r.sequenceNumber, label);
        after = r.sequenceNumber;
      }
      if (read.ended || read.records.length === 0) break;
    }
  }
  return sent;
}
