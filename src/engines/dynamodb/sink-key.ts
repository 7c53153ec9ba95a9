/** A key value: DynamoDB key attributes are strings, numbers (or binary, not supported here). */
export type KeyValue = string | number;
/** A row's key: the hash key value, or `{ [hash]: v, [sort]: v }` on a table with a composite key. */
export type RowKey = KeyValue | Record<string, KeyValue>;

/** A row key for descriptions: its values joined by `/`. */
export function describeKey(key: Record<string, KeyValue>): string {
  return Object.values(key).map(String).join("/");
}
