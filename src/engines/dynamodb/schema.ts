import {
  CreateTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "./schema-names.js";

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
  await createTableIfMissing(client, options.tableName, STATE_KEY_ATTRIBUTE);
  if (options.ttl ?? true) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: options.tableName,
        TimeToLiveSpecification: { Enabled: true, AttributeName: TTL_ATTRIBUTE },
      }),
    );
  }
}

/** Creates an on-demand table with one string hash key, unless it exists. */
export async function createTableIfMissing(
  client: DynamoDBClient,
  tableName: string,
  hashKey: string,
  /** A range key (string) for a composite key. */
  sortKey?: string,
): Promise<void> {
  const keys = sortKey === undefined ? [hashKey] : [hashKey, sortKey];
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: keys.map((name) => ({ AttributeName: name, AttributeType: "S" as const })),
        KeySchema: keys.map((name, i) => ({
          AttributeName: name,
          KeyType: i === 0 ? ("HASH" as const) : ("RANGE" as const),
        })),
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1 }, { TableName: tableName });
}
