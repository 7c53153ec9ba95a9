import { randomUUID } from "node:crypto";
import { kilobytes, round } from "../../audit/report-units.js";
import type { TableAuditReport } from "../../audit/table-audit.js";
import type { EngineConnection } from "../connection.js";
import type { Engine, OpenAdminContext, SimEnv } from "../engine.js";
import { DYNAMODB_MAX_RESULT_BYTES, DYNAMODB_MAX_TRANSACTION_ACTIONS } from "./limits.js";

/*
 * DynamoDB's `Engine`: a state table of its own, or (its inline mode) the state inline in the user's rows. Only types and limits are
 * imported up front; each factory loads the engine's modules (and the AWS SDK) when called.
 */

/**
 * The simulator's tables, on the endpoint given or on a DynamoDB Local started here (the emulator is a dev
 * dependency: loaded only now).
 */
async function openSimEnv(o: { endpoint?: string }, inline: boolean): Promise<SimEnv> {
  const { dynamoDBClient, startDynamoDBLocal } = await import("../../local/emulators/dynamodb-local.js");
  const { createChaosTables, deleteChaosTables, dynamoDBBackend } = await import("./sim-backend.js");
  const { inlineBackend } = await import("./inline-sim-backend.js");
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
async function clientOf(c: EngineConnection, context: OpenAdminContext) {
  return context.dynamodb ?? (await import("./connection.js")).dynamoDBClientFor(c);
}

async function openAdmin(c: EngineConnection, context: OpenAdminContext, inline: boolean) {
  const client = await clientOf(c, context);
  const tableName = c.table as string; // the engine requires it
  if (!inline) return new (await import("./admin.js")).DynamoDBStateAdmin({ client, tableName });
  const { InlineDynamoDBStateAdmin } = await import("./inline-admin.js");
  return new InlineDynamoDBStateAdmin({
    client,
    tableName,
    keyAttribute: c.keyAttribute,
    ...context.mapping,
  });
}

/** Creates the table in a DynamoDB the run owns (the state table, or the inline state's table with its hash key). */
async function prepare(c: EngineConnection, endpoint: string, inline: boolean): Promise<void> {
  const { dynamoDBClient } = await import("../../local/emulators/dynamodb-local.js");
  const { createStateTable, createTableIfMissing } = await import("./schema.js");
  const client = dynamoDBClient(endpoint);
  try {
    const table = c.table as string; // the engine requires it
    if (inline) await createTableIfMissing(client, table, c.keyAttribute ?? "pk");
    else await createStateTable(client, { tableName: table });
  } finally {
    client.destroy();
  }
}

const ROW_MAPPING = ["rowKey", "rowKeyInverse"] as const;

/** DynamoDB, with the state in a table of its own or (`inline`) in the user's rows. */
function dynamodb(inline: boolean) {
  return {
    displayName: "DynamoDB",
    folder: "dynamodb",
    server: true,
    inline,
    connection: inline ? ["endpoint", "region", "keyAttribute", ...ROW_MAPPING] : ["endpoint", "region"],
    requires: ["table"],
    env: {},
    limits: {
      maxResultBytes: DYNAMODB_MAX_RESULT_BYTES,
      // A step's transaction also holds its marker and the fence check.
      maxWritesPerCommit: DYNAMODB_MAX_TRANSACTION_ACTIONS - 2,
    },
    durable: !inline,
    serverFaults: [],
    openAdmin: (c, context) => openAdmin(c, context, inline),
    prepareRunState: (c, endpoint) => prepare(c, endpoint, inline),
    openSimEnv: (o) => openSimEnv(o, inline),
    where: (c) => `${inline ? "dynamodb-inline" : "dynamodb"} ${c.table ?? ""}`,
  } satisfies Omit<Engine, "name">;
}

/** `eonce audit table`'s cost lines: the Scan's segments and read units, and what DescribeTable says. */
function auditCost(r: TableAuditReport, pace: string): string[] {
  const units =
    r.consumedReadUnits === null
      ? "read units not returned"
      : `${round(r.consumedReadUnits)} read units consumed`;
  return [
    `scanned ${r.scannedCount} rows in ${r.segments} segments, ${pace}; ${units} ` +
      `(${r.consistentRead ? "strongly" : "eventually"} consistent)`,
    `table size ${kilobytes(r.tableSizeBytes ?? 0)} (DescribeTable, updated about every 6 hours): a scan reads ` +
      `about ${r.estimatedReadUnits} read units`,
  ];
}

/** DynamoDB with the state inline, in the user's own rows (`--inline`). */
export const dynamodbInlineMode = { name: "dynamodb", ...dynamodb(true) } as const satisfies Engine;

/** DynamoDB with a state table of its own; its inline mode beside it. */
export const dynamodbEngine = {
  name: "dynamodb",
  ...dynamodb(false),
  inlineMode: dynamodbInlineMode,
  // The demo's default: the runtime's DynamoDB Local.
  openDemoStates: async () => undefined,
  auditOptions: ["segments", "consistentRead"],
  auditCost,
  auditTable: async (c, o) => {
    const { dynamoDBClientFor } = await import("./connection.js");
    const { auditTable } = await import("./audit-rows.js");
    const client = dynamoDBClientFor(c);
    try {
      return await auditTable({ ...o, client });
    } finally {
      client.destroy();
    }
  },
} as const satisfies Engine;
