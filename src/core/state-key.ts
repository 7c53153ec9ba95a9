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
