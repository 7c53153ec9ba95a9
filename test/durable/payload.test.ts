import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  durableS3Dispatcher,
  durableSqsDispatcher,
  PayloadValueError,
} from "../../src/durable/index.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { lambdaContext } from "../kit/context.js";
import { s3Notification, s3Record, sqsEvent, sqsRecord } from "../kit/events.js";
import { FakeDurableLambda } from "./fake-lambda.js";
import { type quietLogger, quietMetrics } from "./harness.js";

/** `x` as JSON.parse would build it when nothing is lost: plain objects, properties holding undefined left out. */
function asParsed(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(asParsed);
  if (typeof x !== "object" || x === null) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) if (v !== undefined) out[k] = asParsed(v);
  return out;
}

/** A copy of `x` with every object's keys written in reverse order. */
function reversedKeys(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(reversedKeys);
  if (typeof x !== "object" || x === null) return x;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(x).reverse()) out[k] = reversedKeys((x as Record<string, unknown>)[k]);
  return out;
}

/** Everything fast-check makes: JSON's values and Map, Set, Date, typed arrays, boxed values, sparse arrays, … */
const anything = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withObjectString: true,
  withSparseArray: true,
  withTypedArray: true,
  withUnicodeString: true,
});

describe("canonicalJson", () => {
  it("gives back what it accepts: JSON.parse of its output equals the value, and the output is stable", () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(anything, fc.jsonValue()), (x) => {
        let json: string;
        try {
          json = canonicalJson(x);
        } catch (error) {
          expect(error).toBeInstanceOf(PayloadValueError);
          return;
        }
        accepted++;
        const back = JSON.parse(json);
        expect(isDeepStrictEqual(back, asParsed(x))).toBe(true);
        expect(canonicalJson(back)).toBe(json);
        expect(canonicalJson(reversedKeys(x))).toBe(json);
      }),
      { numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(500);
  });

  it("refuses every value JSON would change, naming where it is", () => {
    const sparse = [1];
    sparse[2] = 3;
    const refused: [unknown, RegExp][] = [
      [{ a: Number.NaN }, /NaN.*at a/],
      [{ a: [1, Number.POSITIVE_INFINITY] }, /Infinity.*at a\[1\]/],
      [{ a: -0 }, /-0/],
      [{ m: new Map([["k", 1]]) }, /Map.*at m/],
      [{ s: new Set([1]) }, /Set.*at s/],
      [{ d: new Date(0) }, /Date.*at d/],
      [{ t: new Uint8Array([1]) }, /Uint8Array.*at t/],
      [{ b: new String("x") }, /String.*at b/],
      [{ a: [1, undefined] }, /undefined in an array.*at a\[1\]/],
      [{ a: sparse }, /sparse.*at a/],
      [JSON.parse('{"__proto__":{"x":1}}'), /"__proto__".*at __proto__/],
      [{ [Symbol("s")]: 1 }, /symbol key/],
      [{ n: 1n }, /bigint.*at n/],
      [{ f: () => 1 }, /function.*at f/],
      [undefined, /undefined is not JSON/],
      [Object.defineProperty({}, "g", { get: () => 1, enumerable: true }), /accessor.*at g/],
      [Object.assign([1], { extra: 2 }), /other own properties/],
    ];
    for (const [value, message] of refused) {
      expect(() => canonicalJson(value)).toThrow(PayloadValueError);
      expect(() => canonicalJson(value)).toThrow(message);
    }
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cycle.*at self/);
    // A value that appears twice, not inside itself, is a tree.
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}');
  });

  it("writes the bytes the first version wrote: keys sorted, integer-like keys first in numeric order", () => {
    expect(canonicalJson({ b: 1, "10": 2, a: { d: [{ z: 1, y: 2 }] }, "9": 3, c: undefined })).toBe(
      '{"9":3,"10":2,"a":{"d":[{"y":2,"z":1}]},"b":1}',
    );
  });
});

/** A Powertools-shaped logger keeping each line's message and fields as text. */
function capturing(lines: string[]): ReturnType<typeof quietLogger> {
  const keep = (message: string, ...rest: unknown[]) => {
    lines.push(
      `${message} ${rest.map((r) => JSON.stringify(r, (_k, v) => (v instanceof Error ? v.message : v))).join(" ")}`,
    );
  };
  const logger = { debug: keep, info: keep, warn: keep, error: keep, createChild: () => logger };
  return logger as unknown as ReturnType<typeof quietLogger>;
}

describe("the dispatcher's payload values", () => {
  const upload = s3Notification(s3Record({ key: "orders/1.json", sequencer: "0A" }));

  it("routes an event whose detail JSON would change as malformed, with no Invoke", async () => {
    for (const amount of [Number.NaN, new Map([["eur", 5]])]) {
      const logged: string[] = [];
      const lambda = new FakeDurableLambda();
      const options = {
        store: new MemoryStore(),
        lambda,
        functionName: "orders:live",
        logger: capturing(logged),
        metrics: quietMetrics(),
        detail: () => ({ amount }),
      };
      // Direct invoke: the same bytes cannot succeed on a retry, so acknowledged and counted.
      const direct = await durableS3Dispatcher(options)(upload, lambdaContext());
      expect(direct.deliveries[0]?.events[0]?.status).toBe("malformed");
      expect(logged.join("\n")).toMatch(/at detail\.amount/);
      // SQS: left to the redrive policy.
      const batch = await durableSqsDispatcher(options)(sqsEvent(sqsRecord(upload)), lambdaContext());
      expect(batch.batchItemFailures).toHaveLength(1);
      expect(lambda.invokes).toBe(0);
    }
  });
});
