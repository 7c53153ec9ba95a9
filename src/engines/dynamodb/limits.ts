import type { AttributeValue } from "@aws-sdk/client-dynamodb";

/**
 * DynamoDB limits the stores and sinks check before sending, so that a request the engine would refuse forever
 * fails with a clear error (or, for a result, is not stored) instead of being retried.
 */

/** An item's size limit (400 KB, attribute names included). */
export const DYNAMODB_MAX_ITEM_BYTES = 400 * 1024;

/** The largest result kept in a state item: the rest of the item (key up to 2 KB, positions, identities) fits beside it. */
export const DYNAMODB_MAX_RESULT_BYTES = 300 * 1024;

/** TransactWriteItems: at most 100 actions and 4 MB in all. */
export const DYNAMODB_MAX_TRANSACTION_ACTIONS = 100;
export const DYNAMODB_MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

/** An item's size as DynamoDB counts it (approximately): attribute names plus values, strings and numbers as text. */
export function dynamoItemBytes(item: Record<string, AttributeValue>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    bytes += Buffer.byteLength(name);
    if (value.S !== undefined) bytes += Buffer.byteLength(value.S);
    else if (value.N !== undefined) bytes += value.N.length;
    else bytes += Buffer.byteLength(JSON.stringify(value));
  }
  return bytes;
}
