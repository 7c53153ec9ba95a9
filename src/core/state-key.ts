import { SubjectTooLongError } from "./errors.js";
import { requireKeyText } from "./key-text.js";

const ORDERED = "o#";
const UNORDERED = "u#";
/** An ordered subject that starts like an unordered key, and the row prefix it gets instead. */
const ORDERED_U = `${ORDERED}${UNORDERED}`;
const ESCAPED = `${UNORDERED}${ORDERED}`;

/** DynamoDB's partition key limit; other stores use the same so one key works everywhere. */
export const MAX_STATE_KEY_BYTES = 2048;

/**
 * Ordered events share one state item per subject; unordered (dedupe-only) events get one per identity,
 * so that deduplicating one never forgets another. The length prefix keeps `u#` keys unambiguous. Subject and
 * identity follow the key rule (key-text.ts; a `MalformedKeyError` otherwise): every engine's key of them is then
 * one-to-one, and so is every key made from the state key (rows, hashes, fences, execution names).
 */
export function stateKey(subject: string, identity: string, ordered: boolean): string {
  requireKeyText("subject", subject);
  requireKeyText("identity", identity);
  const key = ordered ? `${ORDERED}${subject}` : `${UNORDERED}${subject.length}#${subject}${identity}`;
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > MAX_STATE_KEY_BYTES) {
    throw new SubjectTooLongError(
      `state key of ${bytes} bytes exceeds ${MAX_STATE_KEY_BYTES}: ${key.slice(0, 80)}…`,
    );
  }
  return key;
}

/**
 * The row of a state key in inline state (the guard's state inside the user's own row). One-to-one over arbitrary
 * strings, so `stateKeyOfInlineRow` inverts it and no subject can aim at another event's row, and never longer than
 * the state key:
 * - an unordered key (`u#<len>#<subject><identity>`) is its own row: after `u#` always a digit;
 * - an ordered subject's key (`o#<subject>`) lives in the row `<subject>`, so the user's rows are keyed by their
 *   subjects; a subject that itself starts with `u#` would look like an unordered row, so its key `o#u#<rest>` lives
 *   in `u#o#<rest>` instead (the two prefixes swapped: after `u#` a letter, which no unordered key has).
 */
export function inlineRowKey(stateKey: string): string {
  if (stateKey.startsWith(ORDERED_U)) return `${ESCAPED}${stateKey.slice(ORDERED_U.length)}`;
  return stateKey.startsWith(ORDERED) ? stateKey.slice(ORDERED.length) : stateKey;
}

/** inlineRowKey's inverse: `u#o#<rest>` is `o#u#<rest>`, any other `u#` row its own state key, else `o#<row>`. */
export function stateKeyOfInlineRow(row: string): string {
  if (row.startsWith(ESCAPED)) return `${ORDERED_U}${row.slice(ESCAPED.length)}`;
  return row.startsWith(UNORDERED) ? row : `${ORDERED}${row}`;
}
