import { describeValue } from "./describe-value.js";
import { InvalidPositionError, InvalidSequencerError } from "./errors.js";

/**
 * A position orders the events of one subject. It is always a string of printable ASCII, and positions compare as
 * plain strings (`<` in JavaScript, `<` in a DynamoDB condition, `<` on a SQL text column with C collation), so
 * every encoder below produces fixed-width (or length-prefixed) values whose string order equals their numeric order.
 *
 * Why ASCII only: JavaScript compares UTF-16 code units, DynamoDB (and SQL with C collation) compare UTF-8 bytes,
 * and the two disagree outside the Basic Multilingual Plane ("\u{1F600}" < "\uFF01" in bytes, not in UTF-16).
 * Within printable ASCII every engine agrees, so the guard, the memory store and every engine order alike.
 */
export type Position = string;

/** 1..256 printable ASCII characters (the empty position is reserved for unordered events). */
const POSITION_PATTERN = /^[\x20-\x7E]{1,256}$/;

/** Whether `a` orders strictly before `b` (the one comparison every store implements natively). */
export function positionBefore(a: Position, b: Position): boolean {
  return a < b;
}

/** Throws `InvalidPositionError` unless `value` is a position every store orders the same way. */
export function assertPosition(value: unknown): asserts value is Position {
  if (typeof value !== "string" || !POSITION_PATTERN.test(value)) {
    throw new InvalidPositionError(
      `position must be 1..${MAX_POSITION_LENGTH} printable ASCII characters (encode others, e.g. as hex)` +
        (typeof value === "string" ? `, got ${value.length} characters` : `, got a ${typeof value}`),
    );
  }
}

/**
 * S3 sequencers are hex strings of varying length. The S3 docs: compare two sequencers of the same key
 * by right-padding the shorter one with zeros, then comparing lexicographically. We pad every sequencer to
 * one fixed width (and upper-case it), so that stored positions compare correctly without knowing the other
 * value. Observed sequencers are 16 to 20 digits; 32 leaves room and keeps keys short.
 */
export const SEQUENCER_WIDTH = 32;

const HEX = /^[0-9a-fA-F]+$/;

/**
 * An S3 `sequencer` as a position: upper-cased and right-padded with zeros to a fixed width, so that
 * positions compare as strings; an invalid one throws `InvalidSequencerError`.
 */
export function normalizeSequencer(sequencer: unknown, path = "sequencer"): Position {
  if (typeof sequencer !== "string") throw new InvalidSequencerError(sequencer, "not a string", path);
  if (sequencer.length === 0) throw new InvalidSequencerError(sequencer, "empty", path);
  if (!HEX.test(sequencer)) throw new InvalidSequencerError(sequencer, "not hexadecimal", path);
  if (sequencer.length > SEQUENCER_WIDTH) {
    throw new InvalidSequencerError(sequencer, `longer than ${SEQUENCER_WIDTH} digits`, path);
  }
  return sequencer.toUpperCase().padEnd(SEQUENCER_WIDTH, "0");
}

/** Compares two sequencers as S3 documents it. Negative, zero or positive like `Array.sort` comparators. */
export function compareSequencers(a: string, b: string): number {
  return comparePositions(normalizeSequencer(a), normalizeSequencer(b));
}

/** Negative when `a` is before `b`, positive when after, 0 when equal. */
export function comparePositions(a: Position, b: Position): number {
  return positionBefore(a, b) ? -1 : positionBefore(b, a) ? 1 : 0;
}

/** Non-negative integers up to 2^64-1 as 20 zero-padded decimal digits (a version number, a timestamp in ms). */
export const NUMERIC_POSITION_WIDTH = 20;
const MAX_NUMERIC = 2n ** 64n - 1n;

/** An integer in 0..2^64-1 as a position (20 zero-padded digits), so that it compares as a number. */
export function positionFromNumber(value: number | bigint): Position {
  if (typeof value === "number" && !Number.isSafeInteger(value)) {
    throw new InvalidPositionError(`position must be an integer, got ${value}`);
  }
  const n = BigInt(value);
  if (n < 0n || n > MAX_NUMERIC) throw new InvalidPositionError(`position out of range 0..2^64-1: ${n}`);
  return n.toString().padStart(NUMERIC_POSITION_WIDTH, "0");
}

/** A date (a `Date` or a parseable string) as a position: its epoch milliseconds. */
export function positionFromDate(value: Date | string): Position {
  const ms = typeof value === "string" ? Date.parse(value) : value.getTime();
  if (!Number.isFinite(ms) || ms < 0) throw new InvalidPositionError(`not a valid date: ${String(value)}`);
  return positionFromNumber(ms);
}

/** The longest position, in characters. */
export const MAX_POSITION_LENGTH = 256;

/**
 * Accepts what a user's `position()` derivation returns: a number or bigint (encoded), a Date (ms),
 * or a string of printable ASCII that already compares correctly (used as is: "10" sorts before "9",
 * so pad numbers or pass them as numbers).
 */
export function toPosition(value: number | bigint | Date | string): Position {
  if (typeof value === "number" || typeof value === "bigint") return positionFromNumber(value);
  if (value instanceof Date) return positionFromDate(value);
  assertPosition(value);
  return value;
}

/** The longest stream sequence number, in significant digits (Kinesis: `0|([1-9]\d{0,128})`). */
export const MAX_SEQUENCE_NUMBER_DIGITS = 129;

const DECIMAL = /^\d+$/;

/**
 * A stream sequence number (Kinesis, DynamoDB Streams: a decimal string of up to 129 digits) as a position. Their
 * string order is not their numeric order ("10" < "9"), and they are too long for `positionFromNumber`, so the
 * position is the count of significant digits as 3 digits, then the digits: a shorter number sorts first, numbers of
 * one length sort by their digits. Leading zeros are dropped (`"007"` and `"7"` are one number, one position), so
 * positions are equal exactly when the numbers are, and the digits after the prefix are the number itself.
 * Anything but 1..129 significant decimal digits is an `InvalidPositionError`.
 */
export function positionFromSequenceNumber(value: string): Position {
  if (typeof value !== "string" || !DECIMAL.test(value) || value.length > MAX_POSITION_LENGTH) {
    throw new InvalidPositionError(
      `a sequence number must be a string of decimal digits, got ${describeValue(value)}`,
    );
  }
  const digits = value.replace(/^0+(?=\d)/, "");
  if (digits.length > MAX_SEQUENCE_NUMBER_DIGITS) {
    throw new InvalidPositionError(
      `a sequence number has at most ${MAX_SEQUENCE_NUMBER_DIGITS} digits, got ${digits.length}`,
    );
  }
  return `${String(digits.length).padStart(3, "0")}${digits}`;
}
