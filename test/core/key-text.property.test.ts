import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SubjectTooLongError } from "../../src/core/errors.js";
import { isKeyText, MalformedKeyError, requireKeyText } from "../../src/core/key-text.js";
import { inlineRowKey, stateKey } from "../../src/core/state-key.js";
import { durableExecutionName } from "../../src/durable/execution-name.js";
import type { DispatchedExecution } from "../../src/durable/payload.js";
import { fenceKey, markerKey } from "../../src/durable/step-keys.js";
import {
  fenceRedisKey,
  markerRedisKey,
  requireHashTag,
  stampField,
  stateRedisKey,
} from "../../src/engines/valkey/keys.js";
import { decodeS3NotificationKey, encodeS3NotificationKey } from "../../src/sources/key-encoding.js";

/**
 * What every engine keys on: the UTF-8 bytes of the key (node-postgres, better-sqlite3, ioredis and the AWS SDK all
 * send JavaScript strings as UTF-8, a lone surrogate as U+FFFD), or the string itself (memory).
 */
const utf8 = (s: string) => Buffer.from(s, "utf8").toString("hex");

/** Code units that UTF-8 cannot carry, NUL, and what the engines would turn them into. */
const HOSTILE = [
  "\uD800",
  "\uDBFF",
  "\uDC00",
  "\uDFFF",
  "\0",
  "\uFFFD",
  "\uD83D\uDE42",
  "a",
  "#",
  "{",
  "}",
  "%",
];

/**
 * Two strings that differ only where a lone surrogate, NUL or their look-alikes stand: the pairs on which a lossy
 * encoding merges keys (`order\uD800` and `order\uDC00`).
 */
const twins = fc
  .tuple(
    fc.array(fc.oneof(fc.constantFrom("o#", "u#", "order", "1", "/"), fc.string({ maxLength: 3 })), {
      maxLength: 3,
    }),
    fc.array(fc.tuple(fc.constantFrom(...HOSTILE), fc.constantFrom(...HOSTILE)), {
      minLength: 1,
      maxLength: 3,
    }),
  )
  .map(([parts, holes]) => {
    let a = "";
    let b = "";
    holes.forEach(([x, y], i) => {
      a += `${parts[i] ?? ""}${x}`;
      b += `${parts[i] ?? ""}${y}`;
    });
    return [a, b] as const;
  });

/** One key kind: how a string becomes what an engine keys on (undefined when refused by the rule). */
type Mapping = (s: string) => string;

const ordered = (s: string) => stateKey(s, "i", true);
const exec = (subject: string, identity: string): DispatchedExecution => ({
  executionName: durableExecutionName(subject, identity),
  subject,
  identity,
  position: "00000000000000000001",
});

/** Every key kind, on every engine's encoding of it. */
const KINDS: Record<string, Mapping> = {
  "subject: state key (every engine)": (s) => utf8(ordered(s)),
  "subject: dedupe state key": (s) => utf8(stateKey(s, "i", false)),
  "identity: dedupe state key": (s) => utf8(stateKey("s", s, false)),
  "subject: inline row (DynamoDB, PostgreSQL)": (s) => utf8(inlineRowKey(ordered(s))),
  "subject: Valkey state hash": (s) => utf8(stateRedisKey("eonce:", ordered(s))),
  "subject: Valkey execution fence": (s) => utf8(fenceRedisKey("eonce:", ordered(s))),
  "subject: durable execution name": (s) => durableExecutionName(s, "i"),
  "identity: durable execution name": (s) => durableExecutionName("s", s),
  "subject: execution fence (DynamoDB, PostgreSQL, SQLite)": (s) => utf8(fenceKey(exec(s, "i"))),
  "step name: marker": (s) => utf8(markerKey(exec("s", "i"), s)),
  "step name: Valkey marker": (s) => {
    markerKey(exec("s", "i"), s);
    return utf8(markerRedisKey("eonce:", ordered("s"), `n#${s}`));
  },
  "sink key: Valkey target and stamp": (s) => {
    const key = `t{x}${s}`;
    return utf8(`${requireHashTag("sink", key, "eonce:")} ${stampField(key)}`);
  },
  "sink member: Valkey stamp": (s) => utf8(stampField("t{x}", s)),
  "object key: S3 notification": (s) => utf8(decodeS3NotificationKey(encodeS3NotificationKey(s), "key")),
};

/** The mapping's value, or `refused` for the rule's typed error (a size limit is no key either). */
function attempt(f: Mapping, s: string): string | "refused" | "too long" {
  try {
    return f(s);
  } catch (error) {
    if (error instanceof MalformedKeyError) return "refused";
    if (error instanceof SubjectTooLongError) return "too long";
    throw error;
  }
}

describe("the key rule (src/core/key-text.ts)", () => {
  for (const [kind, f] of Object.entries(KINDS)) {
    it(`${kind}: two different strings never share a key, or one is refused`, () => {
      fc.assert(
        fc.property(twins, ([a, b]) => {
          fc.pre(a !== b && a.length > 0 && b.length > 0);
          const [ka, kb] = [attempt(f, a), attempt(f, b)];
          // Refused exactly when the text breaks the rule: nothing well-formed is turned away.
          expect(ka === "refused").toBe(!isKeyText(a));
          expect(kb === "refused").toBe(!isKeyText(b));
          if (ka === "refused" || kb === "refused" || ka === "too long" || kb === "too long") return;
          expect(ka).not.toBe(kb);
        }),
        { numRuns: 400 },
      );
    });
  }

  it("refuses a lone surrogate or NUL anywhere, with the kind and where, and keeps pairs and U+FFFD", () => {
    expect(() => requireKeyText("subject", "order\uD800")).toThrow(
      /subject is not well-formed Unicode \(a lone surrogate\) at code unit 5/,
    );
    expect(() => requireKeyText("step name", "a\0b")).toThrow(/step name contains NUL at code unit 1/);
    expect(() => requireKeyText("identity", "\uDC00x")).toThrow(MalformedKeyError);
    expect(requireKeyText("subject", "order\uFFFD🙂")).toBe("order\uFFFD🙂");
    const error = (() => {
      try {
        requireKeyText("sink key", "\uDFFF");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(MalformedKeyError);
    expect((error as MalformedKeyError).kind).toBe("sink key");
  });
});
