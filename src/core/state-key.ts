import { SubjectTooLongError } from "./errors.js";

/** DynamoDB's partition key limit; other stores use the same so one key works everywhere. */
export const MAX_STATE_KEY_BYTES = 2048;

/**
 * Ordered events share one state item per subject; unordered (dedupe-only) events get one per identity,
 * so that deduplicating one never forgets another. The length prefix keeps `u#` keys unambiguous.
 */
export function stateKey(subject: string, identity: string, ordered: boolean): string {
  const key = ordered ? `o#${subject}` : `u#${subject.length}#${subject}${identity}`;
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > MAX_STATE_KEY_BYTES) {
    throw new SubjectTooLongError(
      `state key of ${bytes} bytes exceeds ${MAX_STATE_KEY_BYTES}: ${key.slice(0, 80)}…`,
    );
  }
  return key;
}

/**
 * The row of a state key in inline state (the guard's state inside the user's own row): an ordered subject's
 * key (`o#<subject>`) lives in the row `<subject>`, any other key (unordered: one per identity) in a row of its own
 * name. One-to-one, so `stateKeyOfInlineRow` inverts it.
 */
export function inlineRowKey(stateKey: string): string {
  return stateKey.startsWith("o#") ? stateKey.slice(2) : stateKey;
}

/** inlineRowKey's inverse: a `u#` row is its own state key, any other row a subject's (`o#<row>`). */
export function stateKeyOfInlineRow(row: string): string {
  return row.startsWith("u#") ? row : `o#${row}`;
}
