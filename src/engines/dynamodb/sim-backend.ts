import {
  DeleteItemCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  GetItemCommand,
} from "@aws-sdk/client-dynamodb";
import { type Backend, counterWrite, type SimOutbox, taggedSink } from "../../sim/backend.js";
import { quiet } from "../../sim/quiet.js";
import type { DynamoDBAtomicWrite } from "./atomic-write.js";
import { dynamoItemBytes } from "./limits.js";
import { DynamoDBOutbox } from "./outbox.js";
import { createOutboxTable } from "./outbox-schema.js";
import { createStateTable, createTableIfMissing, STATE_KEY_ATTRIBUTE } from "./schema.js";
import { DynamoDBFencedSink } from "./sink.js";
import { DynamoDBStepEffects } from "./step-effects.js";
import { DynamoDBStore, toRecord } from "./store.js";

/** Tables shared by every DynamoDB history of a run; each history names its subjects under its own namespace. */
export interface DynamoDBTables {
  client: DynamoDBClient;
  state: string;
  sink: string;
  counter: string;
  /** The user's table of inline state (`npm run chaos -- --engine dynamodb --inline`): one row per subject. */
  inline: string;
  /** Outbox histories' tables, one per history (`historyOutbox`), removed with the run's. */
  outboxes: string[];
}

export async function createChaosTables(client: DynamoDBClient, suffix: string): Promise<DynamoDBTables> {
  const t = {
    client,
    state: `chaos-state-${suffix}`,
    sink: `chaos-sink-${suffix}`,
    counter: `chaos-count-${suffix}`,
    inline: `chaos-inline-${suffix}`,
    outboxes: [],
  };
  await createStateTable(client, { tableName: t.state });
  await createTableIfMissing(client, t.sink, "pk");
  await createTableIfMissing(client, t.counter, "pk");
  await createTableIfMissing(client, t.inline, "pk");
  return t;
}

/** Deletes a run's tables (on an endpoint the run does not own, nothing of it may stay). */
export async function deleteChaosTables(t: DynamoDBTables): Promise<void> {
  for (const name of [t.state, t.sink, t.counter, t.inline, ...t.outboxes])
    await t.client.send(new DeleteTableCommand({ TableName: name })).catch((error: unknown) => {
      if ((error as { name?: unknown } | null)?.name !== "ResourceNotFoundException") throw error;
    });
}

/**
 * An outbox history's outbox: a table of its own (histories run at once, and a polling relay claims the head of
 * every subject it finds, so one table shared would relay other histories' entries), polled as `relayOutbox` does.
 */
export async function historyOutbox(
  t: DynamoDBTables,
  engine: "dynamodb" | "dynamodb-inline",
): Promise<SimOutbox> {
  const tableName = `${t.state.replace("chaos-state", "chaos-outbox")}-${t.outboxes.length}`;
  t.outboxes.push(tableName);
  // No TTL: sent entries expire at virtual times (2096), which DynamoDB Local would compare with its own clock.
  await createOutboxTable(t.client, { tableName, ttl: false });
  // Two buckets (default 8): every claim queries each, and two still spread the subjects.
  const outbox = new DynamoDBOutbox({ client: t.client, tableName, engine, pendingBuckets: 2 });
  return { outbox, reader: async () => outbox };
}

/**
 * The DynamoDB store, the fenced sink (`DynamoDBFencedSink`) and a counter table whose folded effect is an `ADD`
 * in the commit's TransactWriteItems. All I/O is real (DynamoDB Local): the scheduler waits for each request.
 */
export function dynamoDBBackend(t: DynamoDBTables): Backend {
  const store = new DynamoDBStore({ client: t.client, tableName: t.state });
  const sink = new DynamoDBFencedSink({ client: t.client, tableName: t.sink });
  const get = async (table: string, key: string) =>
    (
      await t.client.send(
        new GetItemCommand({ TableName: table, Key: { pk: { S: key } }, ConsistentRead: true }),
      )
    ).Item;
  return {
    name: "dynamodb",
    store,
    sinkReportsItself: false,
    // An ADD in the commit's transaction: n counts applications, fences says whose.
    counter: (e, fence): DynamoDBAtomicWrite =>
      counterWrite("dynamodb", e, fence, {
        item: {
          Update: {
            TableName: t.counter,
            Key: { pk: { S: e.counterId } },
            UpdateExpression: "ADD #n :one, #f :f",
            ExpressionAttributeNames: { "#n": "n", "#f": "fences" },
            ExpressionAttributeValues: { ":one": { N: "1" }, ":f": { NS: [String(fence)] } },
          },
        },
      }),
    sinkAtomic: taggedSink((e, pos, fence) => sink.atomicPut({ position: pos, fence }, { pk: e.subject })),
    sinkPut: (e, pos, fence) => sink.put({ position: pos, fence }, { pk: e.subject }),
    readCounter: async (e) => {
      const item = await get(t.counter, e.counterId);
      return {
        count: Number(item?.n?.N ?? 0),
        fences: (item?.fences?.NS ?? []).map(Number),
      };
    },
    readSink: async (subject) => {
      const item = await get(t.sink, subject);
      return item ? { pos: String(item.srcPos?.S), fence: Number(item.srcFence?.N) } : undefined;
    },
    readState: async (key) => {
      const item = await get(t.state, key);
      return item
        ? { state: toRecord(item), bytes: dynamoItemBytes(item) }
        : { state: undefined, bytes: undefined };
    },
    forget: async (key) => {
      await t.client.send(
        new DeleteItemCommand({ TableName: t.state, Key: { [STATE_KEY_ATTRIBUTE]: { S: key } } }),
      );
    },
    // Markers and fences (`m#…`, `f#…`) beside the counters (the history's namespace), in the counter table.
    stepEffects: (clock) =>
      new DynamoDBStepEffects({ client: t.client, tableName: t.counter, clock, ...quiet() }),
    outbox: () => historyOutbox(t, "dynamodb"),
  };
}
