import { randomUUID } from "node:crypto";
import type { EngineConnection } from "../connection.js";
import type { EngineKit, OpenAdminContext, SimEnv } from "../kit.js";
import { DynamoDBStateAdmin } from "./admin.js";
import { dynamoDBClientFor } from "./connection.js";
import { InlineDynamoDBStateAdmin } from "./inline-admin.js";
import { inlineBackend } from "./inline-sim-backend.js";
import { createStateTable, createTableIfMissing } from "./schema.js";
import { createChaosTables, deleteChaosTables, dynamoDBBackend } from "./sim-backend.js";

/**
 * The simulator's tables, on the endpoint given or on a DynamoDB Local started here (the emulator is a dev
 * dependency: loaded only now).
 */
async function openSimEnv(o: { endpoint?: string }, inline: boolean): Promise<SimEnv> {
  const { dynamoDBClient, startDynamoDBLocal } = await import("../../local/emulators/dynamodb-local.js");
  const local = o.endpoint ? undefined : await startDynamoDBLocal();
  const client = dynamoDBClient(o.endpoint ?? (local?.endpoint as string));
  const tables = await createChaosTables(client, randomUUID().slice(0, 8));
  return {
    backend: (b) => (inline ? inlineBackend(tables, b.rowKey) : dynamoDBBackend(tables)),
    close: async () => {
      // A DynamoDB Local started here keeps its tables in memory and goes with them; on another endpoint they stay.
      try {
        if (o.endpoint) await deleteChaosTables(tables);
      } finally {
        client.destroy();
        await local?.stop();
      }
    },
  };
}

/** The client the context gives, else one with the SDK's configuration and the connection's endpoint and region. */
const clientOf = (c: EngineConnection, context: OpenAdminContext) => context.dynamodb ?? dynamoDBClientFor(c);

/** Creates the table in a DynamoDB the run owns (the state table, or the inline state's table with its hash key). */
async function prepare(c: EngineConnection, endpoint: string, inline: boolean): Promise<void> {
  const { dynamoDBClient } = await import("../../local/emulators/dynamodb-local.js");
  const client = dynamoDBClient(endpoint);
  try {
    const table = c.table as string; // the registry entry requires it
    if (inline) await createTableIfMissing(client, table, c.keyAttribute ?? "pk");
    else await createStateTable(client, { tableName: table });
  } finally {
    client.destroy();
  }
}

/** DynamoDB with a state table of its own. */
export const dynamodbKit: EngineKit = {
  openAdmin: async (c, context) =>
    new DynamoDBStateAdmin({ client: clientOf(c, context), tableName: c.table as string }),
  prepareRunState: (c, endpoint) => prepare(c, endpoint, false),
  openSimEnv: (o) => openSimEnv(o, false),
  where: (c) => `dynamodb ${c.table ?? ""}`,
};

/** DynamoDB with the state inline, in the user's own rows. */
export const dynamodbInlineKit: EngineKit = {
  openAdmin: async (c, context) =>
    new InlineDynamoDBStateAdmin({
      client: clientOf(c, context),
      tableName: c.table as string,
      keyAttribute: c.keyAttribute,
      ...context.mapping,
    }),
  prepareRunState: (c, endpoint) => prepare(c, endpoint, true),
  openSimEnv: (o) => openSimEnv(o, true),
  where: (c) => `dynamodb-inline ${c.table ?? ""}`,
};
