import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stateKey } from "../../src/core/state-key.js";
import { durableExecutionName } from "../../src/durable/execution-name.js";
import { fenceKey, markerKey } from "../../src/durable/step-keys.js";
import {
  escapeTag,
  fenceRedisKey,
  KEY_PREFIX_PATTERN,
  markerRedisKey,
  parseRedisKey,
  stampRedisKey,
  stateRedisKey,
} from "../../src/engines/valkey/keys.js";

/** Printable ASCII a prefix may hold, with the role-like pieces that once let one prefix reach into another's keys. */
const prefixPiece = fc.oneof(
  fc.constantFrom("w:", "f#", "m#", "w", "f", "m", ":", "#", "sink", "count", "eonce:", "x"),
  fc.string({ unit: fc.constantFrom(..."abz09:#-_/.|w%fm!~"), minLength: 1, maxLength: 3 }),
);
const prefix = fc
  .array(prefixPiece, { minLength: 1, maxLength: 4 })
  .map((a) => a.join("").slice(0, 40))
  .filter((p) => KEY_PREFIX_PATTERN.test(p));

/** Two valid prefixes, the second often the first extended by a piece (`P` and `P + "w:"`). */
const twoPrefixes = fc
  .oneof(
    fc.tuple(prefix, prefixPiece).map(([p, ext]) => [p, `${p}${ext}`] as const),
    fc.tuple(prefix, prefix),
  )
  .filter(([a, b]) => a !== b && KEY_PREFIX_PATTERN.test(b));

/** A few subjects, shared by both stores: keys could only meet on the same state key. */
const subject = fc.constantFrom("a", "o#a", "w:{o#a}", "f#", "x}y", "{", "m#n");
const stepName = fc.constantFrom("charge", "w", "f", "}", "a#b");

/** Every key a Valkey store (state, sink stamps) and its step effects (fences, markers) write under `prefix`. */
function valkeyKeys(prefix: string, subjects: string[], steps: string[]): Map<string, string> {
  const keys = new Map<string, string>();
  const add = (what: string, key: string) => {
    const had = keys.get(key);
    if (had !== undefined && had !== what) throw new Error(`${key} is both ${had} and ${what}`);
    keys.set(key, what);
  };
  for (const s of subjects) {
    const sk = stateKey(s, "1", true);
    add(`state ${sk}`, stateRedisKey(prefix, sk));
    for (const tag of [escapeTag(sk), s.replace(/}/g, "")])
      add(`stamps {${tag}}`, stampRedisKey(prefix, tag));
    add(`fence ${sk}`, fenceRedisKey(prefix, sk));
    for (const step of steps) add(`marker ${sk} ${step}`, markerRedisKey(prefix, sk, `exec_1#${step}`));
  }
  return keys;
}

describe("key spaces: two configurations never share a key", () => {
  it("Valkey: two valid key prefixes (one often extending the other) never share a key", () => {
    fc.assert(
      fc.property(
        twoPrefixes,
        fc.uniqueArray(subject, { minLength: 1, maxLength: 4 }),
        fc.uniqueArray(stepName, { minLength: 1, maxLength: 3 }),
        ([p, q], subjects, steps) => {
          const a = valkeyKeys(p, subjects, steps);
          const b = valkeyKeys(q, subjects, steps);
          const shared = [...a].filter(([key]) => b.has(key));
          expect(shared.map(([key, what]) => `${p}'s ${what} is ${q}'s ${b.get(key)}: ${key}`)).toEqual([]);
          // Every key names its own prefix: the text before its first `{`.
          expect([...a.keys()].filter((key) => parseRedisKey(key)?.prefix !== p)).toEqual([]);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("one table for state and steps (DynamoDB, PostgreSQL, SQLite): state keys, fences and markers never meet", () => {
    const execution = (s: string) => ({
      executionName: durableExecutionName(s, "1"),
      subject: s,
      identity: "1",
      position: "00000000000000000001",
    });
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string({ minLength: 1 }), (s, t, step) => {
        const keys = [
          stateKey(s, "1", true),
          stateKey(s, t, false),
          fenceKey(execution(s)),
          fenceKey({ ...execution(s), position: null }),
          markerKey(execution(t), step),
        ];
        expect(new Set(keys.map((k) => k.slice(0, 2)))).toEqual(new Set(["o#", "u#", "f#", "m#"]));
      }),
      { numRuns: 2000 },
    );
  });
});
