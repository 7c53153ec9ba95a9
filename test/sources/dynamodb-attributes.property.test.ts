import { marshall } from "@aws-sdk/util-dynamodb";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import { canonicalKeys, unmarshallImage } from "../../src/sources/dynamodb-attributes.js";

/**
 * The stream's attribute values against an independent encoder: util-dynamodb's `marshall` writes an item, Lambda's
 * JSON carries binaries as base64, and `unmarshallImage` must give the item back.
 */

const name = fc.string({ minLength: 1, maxLength: 8 }).filter((s) => s !== "__proto__");
const number = fc.oneof(
  fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }),
  fc.integer({ min: -999_999, max: 999_999 }).map((n) => n / 1000),
);
const bytes = fc.uint8Array({ minLength: 1, maxLength: 8 });
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.string(),
    number,
    fc.boolean(),
    fc.constant(null),
    bytes,
    fc.uniqueArray(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 4 }).map((a) => new Set(a)),
    fc.uniqueArray(fc.integer(), { minLength: 1, maxLength: 4 }).map((a) => new Set(a)),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(name, tie("value"), { maxKeys: 3 }),
  ),
}));
const item = fc.dictionary(name, value, { minKeys: 1, maxKeys: 5 });

/** What Lambda's JSON holds: the marshalled item with every binary as base64. */
function lambdaJson(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (Array.isArray(v)) return v.map(lambdaJson);
  if (typeof v === "object" && v !== null) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, lambdaJson(x)]));
  }
  return v;
}

describe("DynamoDB attribute values (property)", () => {
  it("unmarshallImage inverts util-dynamodb's marshall, through Lambda's JSON", () => {
    fc.assert(
      fc.property(item, (original) => {
        const json = JSON.parse(JSON.stringify(lambdaJson(marshall(original))));
        expect(unmarshallImage(json, "NewImage")).toEqual(original);
      }),
      { numRuns: 500 },
    );
  });

  it("canonical keys: one text per key map whatever the order of its names, different maps different texts", () => {
    const keyValue = fc.oneof(
      fc
        .string({ minLength: 1 })
        .filter((s) => !/[\p{Cs}\0]/u.test(s))
        .map((S) => ({ S })),
      fc.integer().map((n) => ({ N: String(n) })),
    );
    const keys = fc.dictionary(name, keyValue, { minKeys: 1, maxKeys: 2 });
    fc.assert(
      fc.property(keys, keys, (a, b) => {
        const reversed = Object.fromEntries(Object.entries(a).reverse());
        expect(canonicalKeys(reversed, "Keys")).toBe(canonicalKeys(a, "Keys"));
        const same = JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
        expect(canonicalKeys(a, "Keys") === canonicalKeys(b, "Keys")).toBe(same);
      }),
    );
  });

  it("anything else is a MalformedEventError, never another throw", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (junk) => {
        for (const f of [() => unmarshallImage(junk, "x"), () => canonicalKeys(junk, "x")]) {
          try {
            f();
          } catch (e) {
            expect(e).toBeInstanceOf(MalformedEventError);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
