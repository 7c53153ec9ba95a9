import { type AttributeValue, type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";

/** Every item of a table, strongly consistent: used after a run, when every write must be seen. */
export async function scanTable(
  client: DynamoDBClient,
  tableName: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    for (const item of out.Items ?? []) items.push(unmarshall(item));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}
