import { type AttributeValue, type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import type { WriteLog } from "./client.js";

export interface Correctness {
  /** Effect writes DynamoDB acknowledged beyond the first, per event identity (0 = exactly once). */
  duplicatedEffects: number;
  /** Object keys whose final row is from an older version than the newest delivered one. */
  staleFinal: number;
  /** Object keys with no row although an event for them was delivered (and not planned to fail for good). */
  missing: number;
  /** All three are zero. */
  ok: boolean;
  /** Final `srcPos` per object key, as scanned. */
  finalPositions: Map<string, string>;
}

/**
 * Reads the output table after a run: the final row of every object key must carry the newest position
 * delivered for it, and no event's effect may have been applied twice (from the acknowledged-write log).
 */
export async function checkOutput(
  client: DynamoDBClient,
  writes: WriteLog,
  table: string,
  /** Newest position delivered per subject (`bucket/key`). */
  expected: ReadonlyMap<string, string>,
): Promise<Correctness> {
  const finalPos = new Map<string, string>();
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: table,
        ProjectionExpression: "pk, srcPos",
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) finalPos.set(item.pk?.S ?? "", item.srcPos?.S ?? "");
    startKey = page.LastEvaluatedKey;
  } while (startKey);

  let staleFinal = 0;
  let missing = 0;
  for (const [subject, newest] of expected) {
    const pos = finalPos.get(subject);
    if (pos === undefined) missing++;
    else if (pos !== newest) staleFinal++;
  }
  const perIdentity = new Map<string, number>();
  for (const w of writes.for(table)) {
    const id = `${w.pk}\u0000${w.eid}`;
    perIdentity.set(id, (perIdentity.get(id) ?? 0) + 1);
  }
  let duplicatedEffects = 0;
  for (const n of perIdentity.values()) if (n > 1) duplicatedEffects += n - 1;
  const ok = duplicatedEffects === 0 && staleFinal === 0 && missing === 0;
  return { duplicatedEffects, staleFinal, missing, ok, finalPositions: finalPos };
}
