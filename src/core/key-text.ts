import { MalformedEventError } from "./errors.js";

/**
 * The one rule for the text of every key the library makes or takes (docs/architecture.md, "Keys"): well-formed
 * Unicode without NUL. Why: a JavaScript string is UTF-16, and every engine stores UTF-8 (or refuses what is not):
 * node-postgres, better-sqlite3, ioredis and `Buffer` turn each lone surrogate into U+FFFD, so `a\uD800` and
 * `a\uDC00` would name one row, one Valkey hash, one SHA-256 digest; DynamoDB refuses them; PostgreSQL `text`
 * refuses NUL. Refusing both everywhere keeps every mapping one-to-one and a key valid on one engine valid on all.
 */

/** What a key is: the text the rule is checked on, named in the error. */
export type KeyKind =
  | "subject"
  | "identity"
  | "position"
  | "step name"
  | "key prefix"
  | "sink key"
  | "object key"
  | "effect name"
  | "message name";

/**
 * A key whose text breaks the rule. A `MalformedEventError`, so that a subject, identity or position derived from an
 * event takes the invocation's malformed route (acknowledged and counted, or left to the dead-letter queue): the same
 * bytes can never succeed.
 */
export class MalformedKeyError extends MalformedEventError {
  readonly kind: KeyKind;
  constructor(kind: KeyKind, reason: string, path = "") {
    super(`${kind} ${reason}`, path);
    this.kind = kind;
  }
}

/** A lone surrogate (with the `u` flag, a pair is one code point and does not match) or NUL. */
const NOT_KEY_TEXT = /[\p{Cs}\0]/u;

/** `value` when its text follows the rule; else a `MalformedKeyError` naming `kind` and where the first bad unit is. */
export function requireKeyText(kind: KeyKind, value: string, path = ""): string {
  const bad = NOT_KEY_TEXT.exec(value);
  if (bad === null) return value;
  const what = bad[0] === "\0" ? "contains NUL" : "is not well-formed Unicode (a lone surrogate)";
  throw new MalformedKeyError(kind, `${what} at code unit ${bad.index}`, path);
}

/** Whether `value` follows the rule (for code that reports rather than throws). */
export function isKeyText(value: string): boolean {
  return !NOT_KEY_TEXT.test(value);
}
