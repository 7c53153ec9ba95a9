import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { S3ObjectEvent } from "../../src/core/event.js";
import { isKeyText } from "../../src/core/key-text.js";
import {
  decodeS3NotificationKey,
  encodeS3NotificationKey,
  MAX_S3_KEY_BYTES,
  parseInvocation,
} from "../../src/sources/index.js";
import { eventBridgeS3, s3Notification, s3Record, snsEnvelope, sqsEvent, sqsRecord } from "../kit/index.js";

const bytes = (s: string) => Buffer.byteLength(s, "utf8");

/** Characters that trip up key handling, mixed with arbitrary Unicode. */
const tricky = fc.constantFrom(
  " ",
  "+",
  "%",
  "/",
  "%2B",
  "%20",
  "~",
  "*",
  "&",
  "=",
  "?",
  "#",
  ":",
  "ü",
  "日",
  "😀",
);
const keyChar = fc.oneof(tricky, fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }));

/** Non-empty keys of at most 1,024 UTF-8 bytes, within the key rule (no NUL: src/core/key-text.ts). */
const s3Key = fc
  .oneof(
    fc.string({ unit: keyChar, minLength: 1, maxLength: 60 }),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 200 }),
    fc.string({ unit: "binary", minLength: 1, maxLength: 300 }),
  )
  .filter((k) => bytes(k) <= MAX_S3_KEY_BYTES && isKeyText(k));

/** Pads `prefix` with `x` (1 byte each) up to exactly `target` UTF-8 bytes. */
function padTo(prefix: string, target: number): string {
  return prefix + "x".repeat(target - bytes(prefix));
}

function decodedThrough(input: unknown): S3ObjectEvent {
  const [unit] = parseInvocation(input);
  expect(unit?.error).toBeUndefined();
  return unit?.events[0] as S3ObjectEvent;
}

describe("S3 notification key encoding (property)", () => {
  it("decode(encode(key)) === key", () => {
    fc.assert(
      fc.property(s3Key, (key) => {
        expect(decodeS3NotificationKey(encodeS3NotificationKey(key), "key")).toBe(key);
      }),
      { numRuns: 500 },
    );
  });

  it("the encoding is standard form encoding: URLSearchParams reads it back to the key", () => {
    fc.assert(
      fc.property(s3Key, (key) => {
        const encoded = encodeS3NotificationKey(key);
        expect(encoded).toMatch(/^[A-Za-z0-9.*_\-/+%]*$/);
        expect(new URLSearchParams(`k=${encoded}`).get("k")).toBe(key);
      }),
      { numRuns: 500 },
    );
  });

  it("a `+` in the encoding is always a space in the key, never a plus", () => {
    fc.assert(
      fc.property(s3Key, (key) => {
        const plusses = encodeS3NotificationKey(key).split("+").length - 1;
        expect(plusses).toBe(key.split(" ").length - 1);
      }),
    );
  });

  it("decodes any valid form encoding, not only ours (URLSearchParams encodes / and ~ differently)", () => {
    fc.assert(
      fc.property(s3Key, (key) => {
        const other = new URLSearchParams({ k: key }).toString().slice(2);
        expect(decodeS3NotificationKey(other, "key")).toBe(key);
      }),
      { numRuns: 300 },
    );
  });

  it("keys survive every notification envelope: direct, SQS, SNS-in-SQS", () => {
    fc.assert(
      fc.property(s3Key, (key) => {
        const record = s3Record({ encodedKey: encodeS3NotificationKey(key) });
        expect(decodedThrough(s3Notification(record)).key).toBe(key);
        expect(decodedThrough(sqsEvent(sqsRecord(s3Notification(record), { messageId: "m" }))).key).toBe(key);
        const sns = snsEnvelope(s3Notification(record), { messageId: "s" });
        const event = decodedThrough(sqsEvent(sqsRecord(sns, { messageId: "m" })));
        expect(event.key).toBe(key);
        expect(event.subject).toBe(`amzn-s3-demo-bucket/${key}`);
      }),
      { numRuns: 200 },
    );
  });

  it("EventBridge keys come out exactly as sent", () => {
    fc.assert(
      fc.property(s3Key, (key) => {
        expect(decodedThrough(eventBridgeS3({ key })).key).toBe(key);
      }),
      { numRuns: 200 },
    );
  });

  it("accepts keys of exactly 1,024 UTF-8 bytes and rejects 1,025, whatever the characters", () => {
    const prefix = fc
      .string({ unit: keyChar, maxLength: 200 })
      .filter((p) => bytes(p) <= MAX_S3_KEY_BYTES - 1);
    fc.assert(
      fc.property(prefix, (p) => {
        const max = padTo(p, MAX_S3_KEY_BYTES);
        expect(bytes(max)).toBe(1024);
        expect(decodeS3NotificationKey(encodeS3NotificationKey(max), "k")).toBe(max);
        expect(decodedThrough(eventBridgeS3({ key: max })).key).toBe(max);

        const over = padTo(p, MAX_S3_KEY_BYTES + 1);
        expect(() => decodeS3NotificationKey(encodeS3NotificationKey(over), "k")).toThrow(/1025 bytes/);
        const [unit] = parseInvocation(
          s3Notification(s3Record({ encodedKey: encodeS3NotificationKey(over) })),
        );
        expect(unit?.error?.path).toBe("Records[0].s3.object.key");
        expect(unit?.events).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it("a key whose last character is multi-byte crosses the limit on the byte, not on the character", () => {
    fc.assert(
      fc.property(fc.constantFrom("é", "日", "😀"), (c) => {
        const base = "x".repeat(MAX_S3_KEY_BYTES - bytes(c));
        expect(decodeS3NotificationKey(encodeS3NotificationKey(base + c), "k")).toBe(base + c);
        expect(() => decodeS3NotificationKey(encodeS3NotificationKey(`x${base}${c}`), "k")).toThrow(/1025/);
      }),
    );
  });
});
