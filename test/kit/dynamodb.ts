import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { createStateTable, createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";

/** A client on the run's DynamoDB Local (started by test/global-setup.ts). */
export function localDynamoDB() {
  return dynamoDBClient(inject("dynamodbEndpoint"));
}

export interface Tables {
  store: DynamoDBStore;
  sink: DynamoDBFencedSink;
  close(): void;
}

/** A new state table and fenced sink table on DynamoDB Local. */
export async function dynamoTables(): Promise<Tables> {
  const client = localDynamoDB();
  const suffix = randomUUID().slice(0, 8);
  await createStateTable(client, { tableName: `lambda-state-${suffix}` });
  await createTableIfMissing(client, `lambda-sink-${suffix}`, "pk");
  return {
    store: new DynamoDBStore({ client, tableName: `lambda-state-${suffix}` }),
    sink: new DynamoDBFencedSink({ client, tableName: `lambda-sink-${suffix}` }),
    close: () => client.destroy(),
  };
}
