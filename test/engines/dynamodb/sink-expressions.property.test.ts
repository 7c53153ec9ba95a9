import { randomUUID } from "node:crypto";
import {
  type AttributeValue,
  type DynamoDBClient,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { InlineDynamoDBStore } from "../../../src/engines/dynamodb/inline-store.js";
import { createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import {
  DynamoDBFencedSink,
  type DynamoDBUpdateEffect,
  updateEffect,
} from "../../../src/engines/dynamodb/sink.js";
import { localDynamoDB } from "../../kit/dynamodb.js";

/**
 * Every DynamoDB write the library builds from the user's values (updateEffect, the fenced sink's put, the inline
 * store's row) is checked when built: built without error ⇒ DynamoDB Local accepts it; refused ⇒ an OptionsError,
 * and, where the unchecked request can be built at all (the SDK's marshall does not throw), DynamoDB refuses that
 * request too. Otherwise a handler would run, and its commit fail the same way, on every redelivery.
 */

/** Attribute names: ordinary, dotted (a literal name, no path), empty, the key, placeholder-like, over 64 KB. */
const NAMES = ["a", "b", "a.b", "", "pk", "#eo_s0", ":eo_a0", " ", "[0]", "é", "n".repeat(65_536)];
/** Mostly names DynamoDB takes, so that both sides of each property run often. */
const name = fc.oneof(
  { arbitrary: fc.constantFrom("a", "b", "c", "a.b", "x y", "é"), weight: 6 },
  { arbitrary: fc.constantFrom(...NAMES), weight: 1 },
  { arbitrary: fc.string({ maxLength: 3 }), weight: 1 },
);

/** n lists, one inside the other, around a string: DynamoDB nests at most 31. */
const nested = (n: number): unknown => (n === 0 ? "x" : [nested(n - 1)]);

/** Values DynamoDB, or the SDK's marshall, refuses, and some it takes that look as if it would not. */
const NASTY: unknown[] = [
  undefined,
  null,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  5e-324,
  1e-200,
  1e-130,
  2 ** 60,
  -0,
  "",
  new Set(),
  new Set([""]),
  new Set([1, 2]),
  new Set(["a", 1]),
  new Set([1, "a"]),
  new Set([undefined]),
  new Set([new Uint8Array([1]), new Uint8Array([1])]),
  new Uint8Array(),
  new ArrayBuffer(2),
  { "": 1 },
  { a: undefined, b: [undefined, 1] },
  new Map([["", 1]]),
  () => 1,
  Symbol("s"),
  nested(31),
  nested(32),
  10n ** 40n,
  123456789012345678901234567890123456789n,
  "x".repeat(401 * 1024),
  new Date(0),
];
const value = fc.oneof(
  { arbitrary: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.integer(), fc.string()), weight: 5 },
  { arbitrary: fc.constantFrom(...NASTY), weight: 2 },
  fc.anything({
    maxDepth: 3,
    withSet: true,
    withMap: true,
    withBigInt: true,
    withTypedArray: true,
    withNullPrototype: true,
    withBoxedValues: true,
    withDate: true,
    withSparseArray: true,
  }),
  fc.double(),
);
const addend = fc.oneof(
  { arbitrary: fc.integer(), weight: 4 },
  fc.double(),
  fc.constantFrom<unknown>(Number.NaN, 1e-200, 2 ** 60, "1", undefined, null),
);

/** Conditions: valid ones, and each way a condition's placeholders can be refused. */
const CONDITIONS: DynamoDBUpdateEffect["condition"][] = [
  { expression: "attribute_not_exists(#c)", names: { "#c": "c" } },
  { expression: "attribute_not_exists(#c) OR #c <> :v", names: { "#c": "c" }, values: { ":v": 1 } },
  { expression: "size(#c) > :v", names: { "#c": "c" }, values: { ":v": 0 } }, // false on a new row
  { expression: "attribute_not_exists(#c)", names: { "#c": "c", "#d": "d" } },
  { expression: "#c <> :v", names: { "#c": "c" }, values: { ":v": undefined } },
  { expression: "#c <> :v", names: { "#c": "c" }, values: { ":v": Number.NaN } },
  { expression: "", names: {} },
  { expression: "attribute_not_exists(#c_d)", names: { "#c-d": "c" } },
  { expression: "attribute_not_exists(#c)", names: { "#c": "" } },
  { expression: "attribute_not_exists(#c)" },
];

/** What the property builds: the table and key are filled in per run (`fresh`: a new row). */
const effect = fc.record(
  {
    table: fc.oneof({ arbitrary: fc.constant("ok"), weight: 9 }, fc.constantFrom("t", "")),
    key: fc.oneof(
      { arbitrary: fc.constant<unknown>("fresh"), weight: 9 },
      fc.constantFrom<unknown>("", "k".repeat(2049), Number.NaN),
    ),
    set: fc.dictionary(name, value, { maxKeys: 3 }),
    add: fc.dictionary(name, addend, { maxKeys: 2 }),
    remove: fc.array(name, { maxLength: 2 }),
    condition: fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, fc.constantFrom(...CONDITIONS)),
  },
  { requiredKeys: ["table", "key", "condition"] },
);
type Generated = {
  table: string;
  key: unknown;
  set?: Record<string, unknown>;
  add?: Record<string, unknown>;
  remove?: unknown[];
  condition?: DynamoDBUpdateEffect["condition"];
};

/** The cases named when this was found, tried first. */
const EXAMPLES: [Generated][] = [
  { set: { x: undefined } },
  { set: { a: 1 }, add: { a: 1 } },
  { set: { a: 1 }, remove: ["a"] },
  { set: { a: 1, "a.b": 2 } }, // two attributes: names are literal, never paths
  { set: { a: Number.NaN } },
  { add: { n: 1e-200 } },
  { set: { s: new Set() } },
  { set: { m: { "": 1 } } },
  { remove: ["gone"] }, // no values at all: ExpressionAttributeValues is left out
  { set: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`a${i}`, i])) },
].map((e) => [{ table: "ok", key: "fresh", ...e }]);

const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: true } as const;

/**
 * Whether `value` holds binary other than a Uint8Array: marshall takes it, but the SDK sends it wrongly (an
 * ArrayBuffer or an empty typed array as empty binary) or not at all (a TypeError). Refused when built; there is no
 * DynamoDB answer to compare with.
 */
function foreignBinary(value: unknown, depth = 0): boolean {
  if (value instanceof Uint8Array || typeof value !== "object" || value === null || depth > 40) return false;
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return true;
  const items = value instanceof Map || value instanceof Set ? [...value.values()] : Object.values(value);
  return items.some((item) => foreignBinary(item, depth + 1));
}

/**
 * The request as it would be sent with no checks (updateEffect before it checked), or undefined when the SDK's
 * marshall throws on a value: then there is no request to compare with.
 */
function unchecked(e: DynamoDBUpdateEffect): TransactWriteItem | undefined {
  try {
    const names: Record<string, string> = { ...e.condition?.names };
    const values: Record<string, unknown> = { ...e.condition?.values };
    const clause = (entries: [string, unknown][], kind: string, form: (n: string, v: string) => string) =>
      entries.map(([n, v], i) => {
        names[`#eo_${kind}${i}`] = n;
        values[`:eo_${kind}${i}`] = v;
        return form(`#eo_${kind}${i}`, `:eo_${kind}${i}`);
      });
    const set = clause(Object.entries(e.set ?? {}), "s", (n, v) => `${n} = ${v}`);
    const remove = clause(
      (e.remove ?? []).map((n) => [n, undefined]),
      "r",
      (n) => n,
    );
    const add = clause(Object.entries(e.add ?? {}), "a", (n, v) => `${n} ${v}`);
    const update = [
      set.length > 0 ? `SET ${set.join(", ")}` : "",
      remove.length > 0 ? `REMOVE ${remove.join(", ")}` : "",
      add.length > 0 ? `ADD ${add.join(", ")}` : "",
    ];
    const marshalled = marshall(values, MARSHALL) as Record<string, AttributeValue>;
    return {
      Update: {
        TableName: e.tableName,
        Key: marshall(e.key),
        UpdateExpression: update.filter(Boolean).join(" "),
        ...(e.condition ? { ConditionExpression: e.condition.expression } : {}),
        ExpressionAttributeNames: names,
        ...(Object.keys(marshalled).length > 0 ? { ExpressionAttributeValues: marshalled } : {}),
      },
    };
  } catch {
    return undefined;
  }
}

describe("DynamoDB writes are checked when built", () => {
  let client: DynamoDBClient;
  let table: string;
  let inline: InlineDynamoDBStore;
  const p = positionFromNumber;

  beforeAll(async () => {
    client = localDynamoDB();
    const suffix = randomUUID().slice(0, 8);
    table = `expressions-${suffix}`;
    await createTableIfMissing(client, table, "pk");
    await createTableIfMissing(client, `inline-expressions-${suffix}`, "pk");
    inline = new InlineDynamoDBStore({ client, tableName: `inline-expressions-${suffix}` });
  });
  afterAll(() => client?.destroy());

  /**
   * "accepted"; "condition failed" (a valid request, though DynamoDB checks some things, such as a key attribute
   * updated, only after the condition: no answer on those); else what refused it.
   */
  const send = async (item: TransactWriteItem): Promise<string> => {
    try {
      await client.send(new TransactWriteItemsCommand({ TransactItems: [item] }));
      return "accepted";
    } catch (error) {
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
      if (reasons?.some((r) => r.Code === "ConditionalCheckFailed")) return "condition failed";
      return `refused: ${(error as Error).name}: ${(error as Error).message}`;
    }
  };

  const effectOf = (g: Generated): DynamoDBUpdateEffect =>
    ({
      ...g,
      tableName: g.table === "ok" ? table : g.table,
      key: { pk: g.key === "fresh" ? `row-${randomUUID()}` : g.key },
    }) as DynamoDBUpdateEffect;

  it("property: updateEffect builds ⇒ DynamoDB accepts; OptionsError ⇒ DynamoDB refuses the unchecked request", async () => {
    const seen = { built: 0, refused: 0, compared: 0 };
    await fc.assert(
      fc.asyncProperty(effect, async (g) => {
        const e = effectOf(g as Generated);
        let built: ReturnType<typeof updateEffect> | undefined;
        try {
          built = updateEffect(e);
        } catch (error) {
          expect(error).toBeInstanceOf(OptionsError);
          seen.refused++;
          const request = foreignBinary(e.set) ? undefined : unchecked(e);
          if (!request) return;
          seen.compared++;
          expect(await send(request), (error as Error).message).not.toBe("accepted");
          return;
        }
        seen.built++;
        expect(["accepted", "condition failed"]).toContain(await send(built.item));
      }),
      { numRuns: 300, examples: EXAMPLES },
    );
    // Both sides of the property were exercised, not only refusals.
    expect(seen.built).toBeGreaterThan(30);
    expect(seen.compared).toBeGreaterThan(30);
  });

  it("property: the fenced sink's put (and tombstone) builds ⇒ DynamoDB accepts; else OptionsError", async () => {
    const sink = new DynamoDBFencedSink({ client, tableName: table });
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 3 }), async (attributes) => {
        const pk = `row-${randomUUID()}`;
        const item = { ...attributes, pk };
        let request: ReturnType<typeof sink.putRequest> | undefined;
        try {
          request = sink.putRequest({ position: p(1), fence: 1 }, item);
        } catch (error) {
          expect(error).toBeInstanceOf(OptionsError);
          await expect(sink.tombstone({ position: p(1), fence: 1 }, pk, attributes)).rejects.toThrow(
            OptionsError,
          );
          if (foreignBinary(item)) return;
          let raw: Record<string, AttributeValue> | undefined;
          try {
            raw = marshall(item, MARSHALL) as Record<string, AttributeValue>;
          } catch {
            return; // marshall throws: there is no unchecked request
          }
          const refused = client.send(new PutItemCommand({ TableName: table, Item: raw }));
          await expect(refused, (error as Error).message).rejects.toThrow();
          return;
        }
        expect(await sink.put({ position: p(1), fence: 1 }, item)).toBe("applied");
        expect(await sink.tombstone({ position: p(2), fence: 1 }, pk, attributes)).toBe("applied");
        expect(request.Item?.pk).toEqual({ S: pk });
      }),
      { numRuns: 100, examples: [[{ n: Number.NaN }], [{ n: 1e-200 }], [{ s: new Set() }], [{ "": 1 }]] },
    );
  });

  it("property: the inline store's row builds ⇒ its commit lands (apply: one UpdateItem); else OptionsError", async () => {
    const guard = createGuard({ store: inline });
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, value, { maxKeys: 3 }), async (attributes) => {
        const subject = `bucket/${randomUUID()}`;
        const event = { subject, identity: `${p(1)}:created`, position: p(1) };
        try {
          inline.row({ stateKey: `o#${subject}` }, attributes);
        } catch (error) {
          expect(error).toBeInstanceOf(OptionsError);
          return;
        }
        const out = await guard.apply(event, (ctx) => {
          ctx.atCommit(inline.row(ctx, attributes));
        });
        expect(out, JSON.stringify(out.status === "failed" ? String(out.error) : out.status)).toMatchObject({
          status: "processed",
          writes: [{ status: "applied" }],
        });
      }),
      {
        numRuns: 60,
        examples: [[{ n: Number.NaN }], [{ n: 1e-200 }], [{ s: new Set() }], [{ m: { "": 1 } }]],
      },
    );
  });

  it("refusals name the attribute and the reason", () => {
    const base = { tableName: table, key: { pk: "x" } };
    expect(() => updateEffect({ ...base, set: { x: undefined } })).toThrow(/set\["x"\] is undefined.*remove/);
    expect(() => updateEffect({ ...base, set: { a: 1 }, add: { a: 1 } })).toThrow(/"a" is in two actions/);
    expect(() => updateEffect({ ...base, set: { pk: "y" } })).toThrow(/"pk" is part of the key/);
    expect(() => updateEffect({ ...base, add: { n: 1e-200 } })).toThrow(/add\["n"\] is 1e-200.*1e-130/);
    expect(() => updateEffect({ ...base, set: { s: new Set() } })).toThrow(/set\["s"\] holds an empty set/);
    expect(() => updateEffect({ ...base, set: { m: { a: [{ "": 1 }] } } })).toThrow(
      /set\["m"\]\["a"\]\[0\] has a key that is empty/,
    );
    expect(() => updateEffect({ ...base, set: { d: nested(32) } })).toThrow(/nests lists and maps 32 deep/);
    expect(() => inline.row({ stateKey: "o#x" }, { n: Number.NaN })).toThrow(/\["n"\] holds NaN/);
  });

  it("an inline row write leaves room for the state in the 4 KB update expression", async () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, i]));
    expect(() => inline.row({ stateKey: "o#x" }, many(300))).toThrow(/300 attributes do not fit/);
    const subject = `bucket/${randomUUID()}`;
    const out = await createGuard({ store: inline }).apply(
      { subject, identity: `${p(1)}:created`, position: p(1) },
      (ctx) => ctx.atCommit(inline.row(ctx, many(230))),
    );
    expect(out).toMatchObject({ status: "processed", writes: [{ status: "applied" }] });
  });
});
