import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { convertToAttr } from "@aws-sdk/util-dynamodb";
import { describeError, describeValue } from "../../core/describe-value.js";
import { OptionsError } from "../../core/errors.js";
import { DYNAMODB_MAX_ITEM_BYTES } from "./limits.js";

/**
 * What DynamoDB refuses in any request, whatever the table holds, checked when a write is built (OptionsError): sent,
 * such a write fails with a ValidationException on every redelivery, a poison event whose handler runs each time.
 * The limits, as DynamoDB Local enforces them (test/engines/dynamodb/sink-expressions.property.test.ts compares): attribute
 * names and map keys of 1 byte to under 64 KB; numbers of at most 38 significant digits, magnitude 1e-130 to under
 * 1e126; sets non-empty, without duplicates; lists and maps nested at most 31 deep; expressions up to 4 KB; an item
 * up to 400 KB. What depends on the row (ADD to a string attribute, a condition's bare names) is not checked.
 */

export const DYNAMODB_MAX_NAME_BYTES = 65_535;
export const DYNAMODB_MAX_NESTING = 31;
export const DYNAMODB_MAX_EXPRESSION_BYTES = 4096;
/** Key values: a hash key under 2 KB, a sort key under 1 KB. */
export const DYNAMODB_MAX_HASH_KEY_BYTES = 2048;
export const DYNAMODB_MAX_SORT_KEY_BYTES = 1024;
const MAX_DIGITS = 38;
const MIN_EXPONENT = -130;
const MAX_EXPONENT = 125;

/** How the library marshals values: undefined inside lists and maps is dropped, class instances become maps. */
const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: true } as const;

/** Why DynamoDB refuses `name` as an attribute name or map key, or undefined. */
export function nameProblem(name: unknown): string | undefined {
  if (typeof name !== "string") return `is not a string (${describeValue(name)})`;
  if (name.length === 0) return "is empty";
  const bytes = Buffer.byteLength(name);
  return bytes > DYNAMODB_MAX_NAME_BYTES
    ? `is ${bytes} bytes (at most ${DYNAMODB_MAX_NAME_BYTES})`
    : undefined;
}

/** Throws OptionsError when `name` cannot name an attribute. `label` says where, e.g. `updateEffect: set`. */
export function checkName(label: string, name: unknown): void {
  const problem = nameProblem(name);
  if (problem) throw new OptionsError(`${label}: attribute name ${describeValue(name)} ${problem}`);
}

/**
 * `value` as the AttributeValue sent, or OptionsError saying why DynamoDB would refuse it (or the SDK could not send
 * it). `label` names the value in the message, e.g. `updateEffect: set["price"]`.
 */
export function attributeValue(label: string, value: unknown): AttributeValue {
  if (value === undefined || typeof value === "function" || typeof value === "symbol")
    throw new OptionsError(`${label} is ${typeof value}: DynamoDB stores no such value`);
  let attribute: AttributeValue;
  try {
    attribute = convertToAttr(value, MARSHALL);
  } catch (error) {
    throw new OptionsError(`${label} ${marshallProblem(error)}`, { cause: error });
  }
  const problem = valueProblem(attribute, "", 1);
  if (problem) throw new OptionsError(`${label}${problem}`);
  return attribute;
}

/**
 * The attributes of an item, each checked as attributeValue does; `undefined` and function values are left out, as
 * marshall({ removeUndefinedValues }) leaves them out. Throws OptionsError past the item size limit.
 */
export function attributeItem(
  label: string,
  values: Record<string, unknown>,
): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined || typeof value === "function") continue;
    checkName(label, name);
    item[name] = attributeValue(`${label}[${describeValue(name)}]`, value);
  }
  checkItemBytes(label, item);
  return item;
}

/** Throws OptionsError when the attributes alone exceed DynamoDB's item size (counted low: any item holding them does). */
export function checkItemBytes(label: string, attributes: Record<string, AttributeValue>): void {
  let bytes = 0;
  for (const [name, value] of Object.entries(attributes))
    bytes += Buffer.byteLength(name) + leastBytes(value);
  if (bytes > DYNAMODB_MAX_ITEM_BYTES) {
    throw new OptionsError(`${label}: ${bytes} bytes of attributes, over DynamoDB's 400 KB item size`);
  }
}

/** Throws OptionsError for an expression DynamoDB refuses whatever the placeholders: empty, or over 4 KB. */
export function checkExpression(label: string, expression: unknown): void {
  if (typeof expression !== "string" || expression.trim().length === 0)
    throw new OptionsError(`${label} must be a non-empty expression, got ${describeValue(expression)}`);
  const bytes = Buffer.byteLength(expression);
  if (bytes > DYNAMODB_MAX_EXPRESSION_BYTES)
    throw new OptionsError(`${label} is ${bytes} bytes: DynamoDB expressions hold at most 4 KB`);
}

/** Why DynamoDB refuses `value` as a key attribute (a non-empty string up to `maxBytes`, or a number), or undefined. */
export function keyValueProblem(value: unknown, maxBytes: number): string | undefined {
  if (typeof value === "string") {
    const bytes = Buffer.byteLength(value);
    if (bytes === 0) return "is empty";
    return bytes > maxBytes ? `is ${bytes} bytes (at most ${maxBytes})` : undefined;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return `is ${value}`;
    return parseNumber(String(value)).problem;
  }
  return `is not a string or a number (${describeValue(value)})`;
}

/** Why DynamoDB refuses the AttributeValue, prefixed by where inside it (`.a[2]`), or undefined. */
function valueProblem(value: AttributeValue, path: string, depth: number): string | undefined {
  if (value.N !== undefined) return at(path, parseNumber(value.N).problem);
  if (value.B !== undefined) return at(path, binaryProblem(value.B));
  if (value.SS !== undefined)
    return at(
      path,
      setProblem(value.SS, (s) => s),
    );
  if (value.NS !== undefined) return at(path, numberSetProblem(value.NS));
  if (value.BS !== undefined) return at(path, binarySetProblem(value.BS));
  if (value.L === undefined && value.M === undefined) return undefined; // S, BOOL, NULL
  if (depth > DYNAMODB_MAX_NESTING)
    return at(path, `nests lists and maps ${depth} deep (at most ${DYNAMODB_MAX_NESTING})`);
  if (value.L !== undefined) {
    for (const [i, item] of value.L.entries()) {
      const problem = valueProblem(item, `${path}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  for (const [name, item] of Object.entries(value.M ?? {})) {
    const keyProblem = nameProblem(name);
    if (keyProblem) return at(path, `has a key that ${keyProblem}`);
    const problem = valueProblem(item, `${path}[${describeValue(name)}]`, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

/** What the SDK's marshall refused, in the words of the other checks (its own messages name its options). */
function marshallProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : "";
  if (/non-empty set/.test(message)) return "holds an empty set: DynamoDB has none (leave the attribute out)";
  const special = /Special numeric value (\S+)/.exec(message);
  if (special) return `holds ${special[1]}: DynamoDB numbers are finite`;
  if (/SAFE_INTEGER/.test(message))
    return "holds a number past ±2^53, which JavaScript numbers do not hold exactly (pass a bigint)";
  return `cannot be marshalled: ${describeError(error)}`;
}

function at(path: string, problem: string | undefined): string | undefined {
  return problem === undefined ? undefined : `${path} ${problem}`;
}

/** The number's canonical form (significant digits and exponent: for duplicates in a set), or why it is refused. */
function parseNumber(text: string): { canonical?: string; problem?: string } {
  const m = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return { problem: `is ${describeValue(text)}, not a number DynamoDB can store` };
  const fraction = m[3] ?? m[4] ?? "";
  const all = `${m[2] ?? ""}${fraction}`;
  const digits = all.replace(/^0+/, "");
  if (digits.length === 0) return { canonical: "0" };
  const significant = digits.replace(/0+$/, "");
  // The value is 0.<significant> × 10^(exponent + 1): `exponent` is that of its first digit.
  const exponent = Number(m[5] ?? 0) - fraction.length + digits.length - 1;
  if (significant.length > MAX_DIGITS)
    return { problem: `is ${text}: DynamoDB numbers have at most ${MAX_DIGITS} significant digits` };
  if (exponent > MAX_EXPONENT) return { problem: `is ${text}: DynamoDB numbers are under 1e126` };
  if (exponent < MIN_EXPONENT)
    return { problem: `is ${text}: DynamoDB numbers other than 0 are at least 1e-130` };
  return { canonical: `${m[1] === "-" ? "-" : ""}${significant}e${exponent}` };
}

function setProblem<T>(items: T[], identity: (item: T) => string): string | undefined {
  if (items.length === 0) return "is an empty set: DynamoDB has none (leave the attribute out)";
  return new Set(items.map(identity)).size < items.length ? "is a set with duplicates" : undefined;
}

function numberSetProblem(items: string[]): string | undefined {
  for (const item of items) {
    const problem = parseNumber(item).problem;
    if (problem) return `holds a number that ${problem}`;
  }
  return setProblem(items, (item) => parseNumber(item).canonical ?? item);
}

function binarySetProblem(items: Uint8Array[]): string | undefined {
  for (const item of items) {
    const problem = binaryProblem(item);
    if (problem) return `holds a value that ${problem}`;
  }
  return setProblem(items, (item) =>
    Buffer.from(item.buffer, item.byteOffset, item.byteLength).toString("hex"),
  );
}

/**
 * The SDK sends binary from a Uint8Array (a Buffer is one); marshall also takes other typed arrays, a DataView, an
 * ArrayBuffer or a Blob, which then fail when sent (a TypeError in the serializer, on every try).
 */
function binaryProblem(value: unknown): string | undefined {
  return value instanceof Uint8Array
    ? undefined
    : "is binary the SDK cannot send (pass a Uint8Array or a Buffer)";
}

/** A lower bound of the value's size as DynamoDB counts it (strings and binary exact, everything else 1 byte). */
function leastBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.SS !== undefined) return value.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (value.BS !== undefined) return value.BS.reduce((n, b) => n + b.byteLength, 0);
  if (value.NS !== undefined) return value.NS.length;
  if (value.L !== undefined) return value.L.reduce((n, v) => n + leastBytes(v), 0);
  if (value.M !== undefined)
    return Object.entries(value.M).reduce((n, [k, v]) => n + Buffer.byteLength(k) + leastBytes(v), 0);
  return 1;
}
