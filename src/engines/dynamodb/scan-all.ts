import { type DynamoDBClient, ScanCommand, type ScanCommandInput } from "@aws-sdk/client-dynamodb";
import type { Item } from "./expressions.js";

/** Every item a Scan of `input` returns, page after page (a Scan stops at 1 MB a page). */
export async function scanAll(
  client: DynamoDBClient,
  input: Omit<ScanCommandInput, "ExclusiveStartKey">,
): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await client.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
