import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";

/**
 * Creates the table `input` describes unless one of its name exists, waits until it is there, and enables TTL on
 * `ttlAttribute` when given: the local and test setup of every table this engine creates (deploy with the CDK
 * construct).
 */
export async function setUpTable(
  client: DynamoDBClient,
  input: CreateTableCommandInput,
  ttlAttribute: string | undefined,
): Promise<void> {
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1 }, { TableName: input.TableName });
  if (ttlAttribute === undefined) return;
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: input.TableName,
      TimeToLiveSpecification: { Enabled: true, AttributeName: ttlAttribute },
    }),
  );
}
