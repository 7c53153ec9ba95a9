import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import { parseInvocation } from "../../src/sources/index.js";
import { eventBridgeS3, s3Notification, s3Record, snsEnvelope, sqsEvent, sqsRecord } from "../kit/index.js";

/** Bodies that look more or less like what can arrive: junk, JSON, and mangled notifications. */
const body = fc.oneof(
  fc.string(),
  fc.json(),
  fc.anything().map((v) => JSON.stringify(v) ?? "null"),
  fc.anything().map((v) => JSON.stringify(s3Notification(v))),
  fc.anything().map((v) => JSON.stringify(s3Notification({ ...s3Record({ encodedKey: "k" }), s3: v }))),
  fc
    .anything()
    .map((v) => JSON.stringify(snsEnvelope(JSON.stringify(s3Notification(v)), { messageId: "s" }))),
  fc.anything().map((v) => JSON.stringify({ ...eventBridgeS3({ key: "k" }), detail: v })),
);

describe("parseInvocation never lets one bad message crash a batch (property)", () => {
  it("returns exactly one unit per SQS record, in order, whatever the bodies", () => {
    fc.assert(
      fc.property(
        fc.array(body, { minLength: 1, maxLength: 8 }),
        fc.constantFrom("accept" as const, "reject" as const),
        (bodies, messages) => {
          const units = parseInvocation(
            sqsEvent(...bodies.map((b, i) => sqsRecord(b, { messageId: `m-${i}` }))),
            {
              messages,
            },
          );
          expect(units.map((u) => u.delivery.recordIndex)).toEqual(bodies.map((_, i) => i));
          for (const [i, unit] of units.entries()) {
            expect(unit.delivery.sqs?.messageId).toBe(`m-${i}`);
            if (unit.error) expect(unit.error).toBeInstanceOf(MalformedEventError);
            // Every unit is accounted for: it has events, or an error, or both.
            expect(unit.events.length > 0 || unit.error !== undefined).toBe(true);
            if (messages === "accept" && unit.error === undefined)
              expect(unit.events.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("returns one unit per direct S3 record even when records are arbitrary values", () => {
    fc.assert(
      fc.property(fc.array(fc.anything(), { maxLength: 5 }), (junk) => {
        const records = [s3Record({ encodedKey: "ok" }), ...junk];
        const units = parseInvocation(s3Notification(...records));
        expect(units).toHaveLength(records.length);
        expect(units[0]?.error).toBeUndefined();
      }),
    );
  });

  it("throws only MalformedEventError for arbitrary top-level input", () => {
    fc.assert(
      fc.property(fc.anything(), (input) => {
        try {
          parseInvocation(input);
        } catch (e) {
          expect(e).toBeInstanceOf(MalformedEventError);
        }
      }),
      { numRuns: 500 },
    );
  });
});
