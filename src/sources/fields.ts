import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";

/**
 * Small readers for untrusted JSON. Each failure is a `MalformedEventError` whose path names the exact
 * field, so a bad record can be found in a batch of ten without re-reading it by hand.
 */

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value.length === 0 ? "an empty string" : "a string";
  return `a ${typeof value}`;
}

/**
 * Reads an own property only: names may come from user options (`correlationAttribute`), and `constructor`,
 * `toString` or `__proto__` must not resolve to what `Object.prototype` has.
 */
export function own<T>(obj: Record<string, T>, name: string): T | undefined {
  return Object.hasOwn(obj, name) ? obj[name] : undefined;
}

export function requireObject(value: unknown, path: string): JsonObject {
  if (!isObject(value)) throw new MalformedEventError(`expected an object, got ${describe(value)}`, path);
  return value;
}

export function requireField(obj: JsonObject, field: string, path: string): JsonObject {
  return requireObject(own(obj, field), join(path, field));
}

export function requireString(obj: JsonObject, field: string, path: string): string {
  const value = own(obj, field);
  if (typeof value !== "string" || value.length === 0) {
    const why = value === undefined ? "missing" : `expected a non-empty string, got ${describe(value)}`;
    throw new MalformedEventError(why, join(path, field));
  }
  return value;
}

/** Absent and `null` read as undefined; any other non-string is malformed. */
export function optionalString(obj: JsonObject, field: string, path: string): string | undefined {
  const value = own(obj, field);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw new MalformedEventError(`expected a string, got ${describe(value)}`, join(path, field));
  }
  return value;
}

/** A non-negative integer; decimal digit strings are accepted because some emulators send sizes as text. */
export function optionalCount(obj: JsonObject, field: string, path: string): number | undefined {
  const value = own(obj, field);
  if (value === undefined || value === null) return undefined;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
    throw new MalformedEventError(
      `expected a non-negative integer, got ${describeValue(value)}`,
      join(path, field),
    );
  }
  return n;
}

/** An ISO-8601 timestamp as the services send it; checked so a garbage time cannot feed an identity hash. */
export function requireTime(obj: JsonObject, field: string, path: string): string {
  const value = requireString(obj, field, path);
  if (Number.isNaN(Date.parse(value))) {
    throw new MalformedEventError(`not a valid timestamp: ${describeValue(value)}`, join(path, field));
  }
  return value;
}

/** `Records[2]` + `body` → `Records[2].body`; `` + `Records` → `Records`. */
export function join(path: string, field: string): string {
  return path ? `${path}.${field}` : field;
}

export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}
