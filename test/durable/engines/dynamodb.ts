import { randomUUID } from "node:crypto";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStepEffects } from "../../../src/engines/dynamodb/index.js";
import { createStateTable, createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { updateEffect } from "../../../src/engines/dynamodb/sink-update.js";
import { DynamoDBStore } from "../../../src/engines/dynamodb/store.js";
import { postgresWrite } from "../../../src/engines/postgres/atomic-write.js";
import { countRequests } from "../../../src/observe/request-counter.js";
import { localDynamoDB } from "../../kit/dynamodb.js";
import { quietLogger, quietMetrics } from "../harness.js";
import type { StepEngineUnderTest } from "./under-test.js";

/** DynamoDB Local: an effects table, a state table, a counters table and a fenced sink table per suite. */
export const stepsUnderTest: StepEngineUnderTest = {
  name: "dynamodb",
  async open() {
    const client = localDynamoDB();
    const suffix = randomUUID().slice(0, 8);
    const tables = {
      effects: `steps-${suffix}`,
      state: `steps-state-${suffix}`,
      counters: `steps-counters-${suffix}`,
    };
    const sinkTable = `steps-sink-${suffix}`;
    await createStateTable(client, { tableName: tables.state });
    for (const t of [tables.effects, tables.counters, sinkTable]) await createTableIfMissing(client, t, "pk");
    const sink = new DynamoDBFencedSink({ client, tableName: sinkTable });
    const effects = new DynamoDBStepEffects({
      client,
      tableName: tables.effects,
      logger: quietLogger(),
      metrics: quietMetrics(),
    });
    const counter = countRequests(client, "stepContractCounter");
    const read = async (table: string, pk: string) =>
      (
        await client.send(
          new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }),
        )
      ).Item;
    return {
      effects,
      store: new DynamoDBStore({ client, tableName: tables.state }),
      increment: (ctx, row) =>
        updateEffect({ tableName: tables.counters, key: { pk: `${ctx.subject}#${row}` }, add: { n: 1 } }),
      count: async (subject, row) => Number((await read(tables.counters, `${subject}#${row}`))?.n?.N ?? 0),
      fencedPut: (ctx, row, value) => sink.atomicPut(ctx, { pk: `${ctx.subject}#${row}`, value }),
      value: async (subject, row) => (await read(sinkTable, `${subject}#${row}`))?.value?.S,
      foreignWrite: () => postgresWrite("SELECT 1"),
      requests: () => counter.total(),
      async close() {
        client.destroy();
      },
    };
  },
};
