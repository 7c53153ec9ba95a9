import { BatchWriteItemCommand, type DynamoDBClient, type WriteRequest } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";

/**
 * Puts rows with BatchWriteItem, 25 a request, `parallel` requests at a time; unprocessed items are sent again
 * (after a short pause: the server was busy).
 */
export async function batchPut(
  client: DynamoDBClient,
  tableName: string,
  rows: readonly Record<string, unknown>[],
  parallel = 8,
): Promise<void> {
  const batches: WriteRequest[][] = [];
  for (let i = 0; i < rows.length; i += 25)
    batches.push(rows.slice(i, i + 25).map((row) => ({ PutRequest: { Item: marshall(row) } })));
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      let requests = batches[next++] as WriteRequest[];
      while (requests.length > 0) {
        const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: requests } }));
        requests = out.UnprocessedItems?.[tableName] ?? [];
        if (requests.length > 0) await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}
