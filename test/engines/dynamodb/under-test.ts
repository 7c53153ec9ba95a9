import { randomUUID } from "node:crypto";
import { DeleteItemCommand, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { InlineDynamoDBStore } from "../../../src/engines/dynamodb/inline-store.js";
import { dynamoItemBytes } from "../../../src/engines/dynamodb/limits.js";
import { DynamoDBOutbox } from "../../../src/engines/dynamodb/outbox.js";
import { createOutboxTable } from "../../../src/engines/dynamodb/outbox-schema.js";
import { createStateTable, createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../../src/engines/dynamodb/store.js";
import { countRequests } from "../../../src/observe/request-counter.js";
import { localDynamoDB } from "../../kit/dynamodb.js";
import { inlineRows } from "../../kit/inline-rows.js";
import { loseResponses, type StoreUnderTest } from "../../kit/stores.js";

/** The DynamoDB engines of the store and guard suites (test/kit/stores.ts), on the run's DynamoDB Local. */
export const storesUnderTest = {
  dynamodb: dynamodbUnderTest,
  "dynamodb-inline": dynamodbInlineUnderTest,
};

/**
 * An outbox table for `engine`'s store, and readers on their own clients (two relays racing), closed with the
 * store's.
 */
async function outboxUnderTest(engine: "dynamodb" | "dynamodb-inline", tableName: string) {
  const client = localDynamoDB();
  await createOutboxTable(client, { tableName });
  const clients = [client];
  return {
    outbox: new DynamoDBOutbox({ client, tableName, engine }),
    reader: async () => {
      const own = localDynamoDB();
      clients.push(own);
      return new DynamoDBOutbox({ client: own, tableName, engine });
    },
    close: () => {
      for (const c of clients) c.destroy();
    },
  };
}

async function dynamodbUnderTest(): Promise<StoreUnderTest> {
  const client = localDynamoDB();
  const suffix = randomUUID().slice(0, 8);
  const tableName = `state-${suffix}`;
  const sinkTable = `sink-${suffix}`;
  await createStateTable(client, { tableName });
  await createTableIfMissing(client, sinkTable, "pk");
  const requests = countRequests(client);
  const lost = loseResponses(client);
  const sink = new DynamoDBFencedSink({ client, tableName: sinkTable });
  const outbox = await outboxUnderTest("dynamodb", `outbox-${suffix}`);
  return {
    name: "dynamodb",
    store: new DynamoDBStore({ client, tableName }),
    requests,
    outbox,
    sink: {
      atomic: (ctx, key, value) => sink.atomicPut(ctx, { pk: key, value }),
      put: (ctx, key, value) => sink.put(ctx, { pk: key, value }),
      rowFor: (stateKey) => `row-${stateKey}`,
      read: async (key) => {
        const row = await sink.get(key);
        return row
          ? { value: String(row.value), srcPos: String(row.srcPos), srcFence: Number(row.srcFence) }
          : undefined;
      },
    },
    forget: async (key) => {
      await client.send(new DeleteItemCommand({ TableName: tableName, Key: { pk: { S: key } } }));
    },
    loseResponses: (count) => lost.lose(count),
    rawItem: async (key) => {
      const out = await client.send(
        new GetItemCommand({ TableName: tableName, Key: { pk: { S: key } }, ConsistentRead: true }),
      );
      if (!out.Item) return undefined;
      return { attributes: Object.keys(out.Item).sort(), bytes: dynamoItemBytes(out.Item) };
    },
    close: async () => {
      outbox.close();
      client.destroy();
    },
  };
}

async function dynamodbInlineUnderTest(): Promise<StoreUnderTest> {
  const client = localDynamoDB();
  const suffix = randomUUID().slice(0, 8);
  const tableName = `inline-${suffix}`;
  await createTableIfMissing(client, tableName, "pk");
  const outbox = await outboxUnderTest("dynamodb-inline", `inline-outbox-${suffix}`);
  const requests = countRequests(client);
  const lost = loseResponses(client);
  const store = new InlineDynamoDBStore({ client, tableName });
  // The sink hooks are row writes: the test's value with the writing claim's position and fence, as the fenced
  // sink stores them, so a read shows which claim's write landed. A test's row name is the state key's row
  // (`rowFor`), mapped back for the write (inline-rows.ts).
  const { rowFor, stateKeyOf } = inlineRows((k) => store.rowKeyOf(k));
  const attributes = (ctx: { position: string | undefined; fence: number }, value: string) => ({
    value,
    srcPos: ctx.position ?? "",
    srcFence: ctx.fence,
  });
  const rowOf = (row: string) =>
    client.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: row } }, ConsistentRead: true }));
  return {
    name: "dynamodb-inline",
    store,
    requests,
    outbox,
    sink: {
      rowPerStateKey: true,
      rowFor,
      atomic: (ctx, row, value) => store.row({ stateKey: stateKeyOf(row) }, attributes(ctx, value)),
      put: (ctx, row, value) =>
        store.putRow({ stateKey: stateKeyOf(row), fence: ctx.fence }, attributes(ctx, value)),
      read: async (row) => {
        const item = (await rowOf(row)).Item;
        // The row also holds the state: no user value means no row write landed.
        if (item?.value?.S === undefined) return undefined;
        return { value: item.value.S, srcPos: item.srcPos?.S ?? "", srcFence: Number(item.srcFence?.N) };
      },
    },
    forget: async (key) => {
      await client.send(
        new DeleteItemCommand({ TableName: tableName, Key: { pk: { S: store.rowKeyOf(key) } } }),
      );
    },
    loseResponses: (count) => lost.lose(count),
    rawItem: async (key) => {
      const out = await rowOf(store.rowKeyOf(key));
      if (!out.Item) return undefined;
      return { attributes: Object.keys(out.Item).sort(), bytes: dynamoItemBytes(out.Item) };
    },
    close: async () => {
      outbox.close();
      client.destroy();
    },
  };
}
