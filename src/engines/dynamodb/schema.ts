import type { CreateTableCommandInput, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "./schema-names.js";
import { setUpTable } from "./table-setup.js";

// The names live in schema-names.ts (no imports), which the CDK construct reads too.
export { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE };

/** The options of `createStateTable`. */
export interface CreateStateTableOptions {
  tableName: string;
  /** Enable TTL on `expiresAt` (DynamoDB Local deletes expired items too, by the real clock). Default true. */
  ttl?: boolean;
}

/** Creates the state table if it does not exist (for local use and tests; deploy with the CDK construct). */
export async function createStateTable(
  client: DynamoDBClient,
  options: CreateStateTableOptions,
): Promise<void> {
  const ttl = (options.ttl ?? true) ? TTL_ATTRIBUTE : undefined;
  await setUpTable(client, keyedTable(options.tableName, STATE_KEY_ATTRIBUTE), ttl);
}

/** Creates an on-demand table with one string hash key, unless it exists. */
export async function createTableIfMissing(
  client: DynamoDBClient,
  tableName: string,
  hashKey: string,
  /** A range key (string) for a composite key. */
  sortKey?: string,
): Promise<void> {
  await setUpTable(client, keyedTable(tableName, hashKey, sortKey), undefined);
}

function keyedTable(tableName: string, hashKey: string, sortKey?: string): CreateTableCommandInput {
  const keys = sortKey === undefined ? [hashKey] : [hashKey, sortKey];
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: keys.map((name) => ({ AttributeName: name, AttributeType: "S" as const })),
    KeySchema: keys.map((name, i) => ({
      AttributeName: name,
      KeyType: i === 0 ? ("HASH" as const) : ("RANGE" as const),
    })),
  };
}
