import { type NumberValue, NumberValueImpl } from "@aws-sdk/util-dynamodb";
import { describeText, describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import { requireKeyText } from "../core/key-text.js";
import { describe, isObject, join } from "./fields.js";

/**
 * DynamoDB attribute values as a stream record carries them in Lambda's JSON (`{"S": "…"}`, `{"N": "1.5"}`, binaries
 * as base64), checked with the path of each, and unmarshalled as `@aws-sdk/util-dynamodb` does with `NumberValue`
 * for the numbers a `number` cannot hold exactly. Not util-dynamodb's `unmarshall` itself: it takes the SDK's shape
 * (binaries as bytes), its maps assign their keys (an attribute named `__proto__` would set the prototype instead of
 * being one), and its errors are untyped.
 */

/** DynamoDB's nesting limit for documents: deeper input is not an item DynamoDB wrote. */
const MAX_DEPTH = 32;
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** At most 15 significant digits: the nearest double of every such decimal (in DynamoDB's range) prints it back. */
const EXACT_DIGITS = 15;

/** An image or a key map (`Keys`, `NewImage`, `OldImage`): attribute name → value, unmarshalled. */
export function unmarshallImage(value: unknown, path: string): Record<string, unknown> {
  return mapOf(value, path, 0);
}

/**
 * The item's keys as canonical JSON: names sorted, each value as DynamoDB marshals it (`{"S":"o-1"}`); keys are
 * strings, numbers or binaries only, each following the key rule (key-text.ts). JSON.stringify escapes each part, so
 * two key maps give one text exactly when they are equal.
 */
export function canonicalKeys(keys: unknown, path: string): string {
  if (!isObject(keys)) throw new MalformedEventError(`expected an object, got ${describe(keys)}`, path);
  const names = Object.keys(keys).sort();
  if (names.length === 0) throw new MalformedEventError("expected at least one key attribute", path);
  const parts = names.map((name) => {
    const at = join(path, describeText(name));
    requireKeyText("subject", name, at);
    const attribute = keys[name];
    const [type, scalar] = isObject(attribute) ? (Object.entries(attribute)[0] ?? []) : [];
    if (
      !isObject(attribute) ||
      Object.keys(attribute).length !== 1 ||
      !["S", "N", "B"].includes(type ?? "")
    ) {
      throw new MalformedEventError(`a key must be {"S"|"N"|"B": …}, got ${describeValue(attribute)}`, at);
    }
    if (typeof scalar !== "string" || scalar.length === 0) {
      throw new MalformedEventError(
        `expected a non-empty string, got ${describe(scalar)}`,
        join(at, type as string),
      );
    }
    requireKeyText("subject", scalar, join(at, type as string));
    leaf(type as string, scalar, join(at, type as string));
    return `${JSON.stringify(name)}:{${JSON.stringify(type)}:${JSON.stringify(scalar)}}`;
  });
  return `{${parts.join(",")}}`;
}

function mapOf(value: unknown, path: string, depth: number): Record<string, unknown> {
  if (!isObject(value)) throw new MalformedEventError(`expected an object, got ${describe(value)}`, path);
  const out: Record<string, unknown> = {};
  for (const [name, attribute] of Object.entries(value)) {
    setOwn(out, name, native(attribute, join(path, describeText(name)), depth + 1));
  }
  return out;
}

function native(attribute: unknown, path: string, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new MalformedEventError(`nested deeper than ${MAX_DEPTH} levels`, path);
  if (!isObject(attribute) || Object.keys(attribute).length !== 1) {
    throw new MalformedEventError(
      `expected an attribute value with one type ({"S": …}, {"N": …}, …), got ${describeValue(attribute)}`,
      path,
    );
  }
  const [type, v] = Object.entries(attribute)[0] as [string, unknown];
  const at = join(path, describeText(type));
  switch (type) {
    case "S":
    case "N":
    case "B":
      if (typeof v !== "string") throw new MalformedEventError(`expected a string, got ${describe(v)}`, at);
      return leaf(type, v, at);
    case "BOOL":
      if (typeof v !== "boolean") throw new MalformedEventError(`expected a boolean, got ${describe(v)}`, at);
      return v;
    case "NULL":
      if (v !== true) throw new MalformedEventError(`expected true, got ${describeValue(v)}`, at);
      return null;
    case "SS":
    case "NS":
    case "BS":
      return setOf(type.slice(0, 1), v, at);
    case "L":
      if (!Array.isArray(v)) throw new MalformedEventError(`expected an array, got ${describe(v)}`, at);
      return v.map((item, i) => native(item, `${at}[${i}]`, depth + 1));
    case "M":
      return mapOf(v, at, depth);
    default:
      throw new MalformedEventError(`unknown attribute type ${describeValue(type)}`, at);
  }
}

function setOf(type: string, v: unknown, path: string): Set<unknown> {
  if (!Array.isArray(v)) throw new MalformedEventError(`expected an array, got ${describe(v)}`, path);
  return new Set(
    v.map((item, i) => {
      if (typeof item !== "string") {
        throw new MalformedEventError(`expected a string, got ${describe(item)}`, `${path}[${i}]`);
      }
      return leaf(type, item, `${path}[${i}]`);
    }),
  );
}

/** A string, number or binary from its text: numbers checked and made exact, binaries decoded from strict base64. */
function leaf(type: string, text: string, path: string): unknown {
  if (type === "S") return text;
  if (type === "B") {
    if (!BASE64.test(text))
      throw new MalformedEventError(`expected base64, got ${describeValue(text)}`, path);
    return new Uint8Array(Buffer.from(text, "base64"));
  }
  if (!NUMBER.test(text))
    throw new MalformedEventError(`expected a number, got ${describeValue(text)}`, path);
  return numberOf(text);
}

/**
 * A `number` when it reads back as the same decimal: an integer up to 2^53-1 in magnitude, or at most 15 significant
 * digits in DynamoDB's range (the nearest double of such a decimal prints it back); else a `NumberValue`.
 */
function numberOf(text: string): number | NumberValue {
  const n = Number(text);
  if (/^[+-]?\d+$/.test(text) && Number.isSafeInteger(n)) return n;
  const mantissa = text
    .replace(/^[+-]/, "")
    .replace(/[eE].*$/, "")
    .replace(".", "");
  const significant = mantissa.replace(/^0+/, "").replace(/0+$/, "");
  const exact = significant.length <= EXACT_DIGITS && Number.isFinite(n) && (n !== 0 || significant === "");
  return exact ? n : new NumberValueImpl(text);
}

/** `out[name] = value` would set the prototype for `__proto__`; this keeps every name an own property. */
function setOwn(out: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
}
