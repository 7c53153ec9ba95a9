import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import { parseInvocation } from "../../src/sources/index.js";
import { deepJson, splice } from "./hostile.js";

const fixtures = fileURLToPath(new URL("../fixtures/events/", import.meta.url));
const record = (name: string, i = 0) =>
  (JSON.parse(readFileSync(join(fixtures, name), "utf8")) as { Records: unknown[] }).Records[i];

const KINESIS = record("kinesis-batch.json");
const DYNAMODB = [
  record("dynamodb-insert-modify-remove.json", 1),
  record("dynamodb-ttl-remove.json"),
  record("dynamodb-new-image.json"),
];

/** Every field path of a JSON value, so a property can replace any of them. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== "object" || value === null) return [prefix];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...entries.flatMap(([k, v]) => paths(v, [...prefix, k]))].filter((p) => p.length > 0);
}

/** A good record with one field replaced by anything (deep nesting included), or a value that is no record. */
function mangled(template: unknown): fc.Arbitrary<unknown> {
  const at = fc.constantFrom(...paths(template));
  return fc.oneof(
    fc.tuple(at, fc.jsonValue()).map(([path, v]) => splice(template, path, JSON.stringify(v) ?? "null")),
    fc
      .tuple(at, fc.integer({ min: 1000, max: 20_000 }))
      .map(([path, depth]) => splice(template, path, deepJson(depth))),
    fc.tuple(at, fc.string()).map(([path, v]) => splice(template, path, JSON.stringify(v))),
    fc.anything(),
  );
}

function checkUnits(records: unknown[], envelope: string): void {
  const units = parseInvocation({ Records: records });
  expect(units).toHaveLength(records.length);
  for (const [i, unit] of units.entries()) {
    expect(unit.delivery.recordIndex).toBe(i);
    expect(unit.delivery.envelope).toBe(envelope);
    if (unit.error) {
      expect(unit.error).toBeInstanceOf(MalformedEventError);
      expect(unit.events).toEqual([]);
    } else {
      expect(unit.events).toHaveLength(1);
      expect(unit.delivery.stream?.sequenceNumber).toMatch(/^\d+$/);
    }
  }
}

describe("stream batches never crash on a hostile record (property)", () => {
  it("Kinesis: one unit per record, each an event or a MalformedEventError", () => {
    fc.assert(
      fc.property(fc.array(mangled(KINESIS), { maxLength: 6 }), (junk) => {
        checkUnits([KINESIS, ...junk], "kinesis");
      }),
      { numRuns: 400 },
    );
  });

  it("DynamoDB Streams: one unit per record, each an event or a MalformedEventError", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(...DYNAMODB.map(mangled)), { maxLength: 6 }), (junk) => {
        checkUnits([DYNAMODB[0], ...junk], "dynamodb-streams");
      }),
      { numRuns: 400 },
    );
  });

  it("the whole invocation throws only for the documented cases, and only MalformedEventError", () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom("window", "state", "isFinalInvokeForWindow", "shardId", "other"),
          fc.jsonValue(),
        ),
        (extra) => {
          const invocation = { Records: [KINESIS], ...extra };
          const windowed = ["window", "state", "isFinalInvokeForWindow"].some((f) => Object.hasOwn(extra, f));
          if (windowed)
            expect(() => parseInvocation(invocation)).toThrow(/tumbling windows are not supported/);
          else expect(parseInvocation(invocation)).toHaveLength(1);
        },
      ),
    );
  });
});
