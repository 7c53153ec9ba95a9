import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import { requireKeyText } from "../core/key-text.js";

/** S3 object keys are 1 to 1,024 bytes of UTF-8. */
export const MAX_S3_KEY_BYTES = 1024;

const BAD_ESCAPE = /%(?![0-9a-fA-F]{2})/;

/**
 * Encodes a key the way S3 writes it into notification records: `application/x-www-form-urlencoded`
 * (space → `+`, `+` → `%2B`, UTF-8 bytes as upper-case `%XX`), leaving `/` and Java's URLEncoder safe set
 * (`A-Z a-z 0-9 . - * _`) as is. Used by tests and by the local runtime that synthesizes notifications.
 */
export function encodeS3NotificationKey(key: string): string {
  requireKeyText("object key", key, "key");
  return encodeURIComponent(key)
    .replace(/%20/g, "+")
    .replace(/%2F/g, "/")
    .replace(/[!~'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * Decodes a notification key: `+` is a space, `%XX` are UTF-8 bytes. A stray `%` or escapes that are not
 * UTF-8 cannot be a key S3 wrote, so they are malformed input rather than something to guess at.
 */
export function decodeS3NotificationKey(encoded: string, path: string): string {
  const bad = BAD_ESCAPE.exec(encoded);
  if (bad) {
    const near = encoded.slice(bad.index, bad.index + 3);
    throw new MalformedEventError(
      `key has an invalid percent escape ${describeValue(near)} at character ${bad.index}`,
      path,
    );
  }
  let key: string;
  try {
    key = decodeURIComponent(encoded.replace(/\+/g, " "));
  } catch (cause) {
    throw new MalformedEventError("key has percent escapes that are not valid UTF-8", path, { cause });
  }
  return requireValidS3Key(key, path);
}

/**
 * Checks a decoded key against S3's limits (non-empty, at most 1,024 UTF-8 bytes) and the key rule of every key
 * (src/core/key-text.ts: well-formed Unicode, no NUL): the key becomes the event's subject.
 */
export function requireValidS3Key(key: string, path: string): string {
  if (key.length === 0) throw new MalformedEventError("key is empty", path);
  requireKeyText("object key", key, path);
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > MAX_S3_KEY_BYTES) {
    throw new MalformedEventError(`key is ${bytes} bytes of UTF-8, longer than ${MAX_S3_KEY_BYTES}`, path);
  }
  return key;
}
