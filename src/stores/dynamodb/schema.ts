import {
  CreateTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";

/**
 * State table schema. One item per state key:
 *
 * | attribute  | type | meaning                                                                 |
 * |------------|------|-------------------------------------------------------------------------|
 * | pk         | S    | state key: `o#<subject>` (ordered) or `u#<len>#<subject><identity>`     |
 * | status     | S    | running / done / released                                               |
 * | pos        | S    | position of the current or last claim ("" when unordered)               |
 * | eid        | S    | identity of the current or last claim                                   |
 * | fence      | N    | taken by each claim, above the old one; commit/renew/release check it   |
 * | leaseUntil | N    | epoch ms; present while running                                         |
 * | cpos, ceid | S    | position and identity of the last committed event                       |
 * | result     | S    | JSON result of the committed event, replayed to duplicates              |
 * | expiresAt  | N    | epoch seconds; the table's TTL attribute                                |
 * | tok        | S    | token of the claim that holds (or last held) the item                   |
 * | att        | N    | consecutive claims of the current identity; removed at commit           |
 * | resultOmitted | N | size of a committed result too large to store                           |
 *
 * Only `pk` is a key: the table needs no index. Billing on demand; TTL on `expiresAt`.
 */
export const STATE_KEY_ATTRIBUTE = "pk";
export const TTL_ATTRIBUTE = "expiresAt";

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
): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: hashKey, AttributeType: "S" }],
        KeySchema: [{ AttributeName: hashKey, KeyType: "HASH" }],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1 }, { TableName: tableName });
}
