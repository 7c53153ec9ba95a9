import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import { parseInvocation } from "../../src/sources/index.js";
import type { DeliveryUnit } from "../../src/sources/types.js";
import { eventBridgeS3, s3Notification, s3Record, snsEnvelope, sqsRecord } from "../kit/index.js";
import { deepJson, spliceJson } from "./hostile.js";

/**
 * Hostile JSON (very deep nesting, huge strings, numbers past 2^53, prototype names) at every field of every
 * envelope: parseInvocation throws nothing but MalformedEventError, a bad record never costs its neighbour,
 * and every message is short and on one line (messages go to logs and DLQ attributes).
 */

const MAX_MESSAGE = 600;

const hostileJson: fc.Arbitrary<string> = fc.oneof(
  fc.json(),
  fc
    .record({
      depth: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 5_000, max: 100_000 })),
      leaf: fc.json(),
      open: fc.constantFrom("[" as const, "{" as const),
    })
    .map(({ depth, leaf, open }) => deepJson(depth, leaf, open)),
  fc
    .record({
      ch: fc.constantFrom("A", "0", "\n", "😀", "%", "\u2028", '"', "\ud800", "+"),
      n: fc.integer({ min: 1_000, max: 300_000 }),
    })
    .map(({ ch, n }) => JSON.stringify(ch.repeat(n))),
  fc.constantFrom(
    '"9007199254740993"',
    '"1e400"',
    "1e400",
    "-0",
    '"constructor"',
    '"__proto__"',
    '{"__proto__":{"a":1}}',
    '"s3:TestEvent"',
    '"aws:s3"',
    '"aws:sqs"',
    "null",
    "{}",
    "[]",
    '""',
  ),
);

type Path = readonly (string | number)[];

const S3_RECORD = s3Record({ encodedKey: "k" });
const S3_PATHS: Path[] = [
  [],
  ["eventSource"],
  ["eventName"],
  ["eventTime"],
  ["awsRegion"],
  ["s3"],
  ["s3", "bucket"],
  ["s3", "bucket", "name"],
  ["s3", "object"],
  ["s3", "object", "key"],
  ["s3", "object", "size"],
  ["s3", "object", "sequencer"],
  ["s3", "object", "eTag"],
  ["s3", "object", "versionId"],
  ["responseElements"],
  ["responseElements", "x-amz-request-id"],
  ["userIdentity"],
];

const eventBridge = (source: string) => ({ ...eventBridgeS3({ key: "k", sequencer: "0A" }), source });
const EB_PATHS: Path[] = [
  [],
  ["id"],
  ["detail-type"],
  ["source"],
  ["time"],
  ["region"],
  ["detail"],
  ["detail", "bucket"],
  ["detail", "bucket", "name"],
  ["detail", "object"],
  ["detail", "object", "key"],
  ["detail", "object", "size"],
  ["detail", "object", "sequencer"],
  ["detail", "object", "etag"],
  ["detail", "object", "version-id"],
  ["detail", "request-id"],
];

const TEST_EVENT = { Service: "Amazon S3", Event: "s3:TestEvent", Time: "2024-05-01T12:00:00Z", Bucket: "b" };
const TEST_PATHS: Path[] = [[], ["Event"], ["Bucket"], ["RequestId"], ["Time"], ["Records"]];

const SQS_PATHS: Path[] = [
  ["messageId"],
  ["receiptHandle"],
  ["attributes"],
  ["attributes", "ApproximateReceiveCount"],
  ["attributes", "MessageGroupId"],
  ["messageAttributes"],
  ["messageAttributes", "traceId"],
  ["messageAttributes", "traceId", "stringValue"],
  ["eventSourceARN"],
  ["eventSource"],
  ["body"],
];

const goodSqs = () => sqsRecord(s3Notification(S3_RECORD), { messageId: "good" });
const sqsWithBody = (body: string) => ({ Records: [goodSqs(), sqsRecord(body, { messageId: "bad" })] });

interface Envelope {
  name: string;
  paths: Path[];
  /** The invocation with `value` (JSON text) at `path`, as JSON text. */
  build(path: Path, value: string, source: string): string;
  /** SQS batches and direct S3 notifications: one unit per record, the good first one unaffected. */
  batch: boolean;
}

/** `spliceJson`, also for the empty path (the value replaces the whole template). */
const at = (template: unknown, path: Path, value: string) =>
  path.length === 0 ? value : spliceJson(template, path, value);

const ENVELOPES: Envelope[] = [
  {
    name: "direct S3",
    paths: S3_PATHS,
    batch: true,
    build: (p, v) => at(s3Notification(S3_RECORD, s3Record({ encodedKey: "k2" })), ["Records", 1, ...p], v),
  },
  {
    name: "S3 in SQS",
    paths: S3_PATHS,
    batch: true,
    build: (p, v) => JSON.stringify(sqsWithBody(at(s3Notification(S3_RECORD), ["Records", 0, ...p], v))),
  },
  {
    name: "S3 in SNS in SQS",
    paths: S3_PATHS,
    batch: true,
    build: (p, v) =>
      JSON.stringify(
        sqsWithBody(
          JSON.stringify(
            snsEnvelope(at(s3Notification(S3_RECORD), ["Records", 0, ...p], v), { messageId: "s" }),
          ),
        ),
      ),
  },
  { name: "direct EventBridge", paths: EB_PATHS, batch: false, build: (p, v, s) => at(eventBridge(s), p, v) },
  {
    name: "EventBridge in SQS",
    paths: EB_PATHS,
    batch: true,
    build: (p, v, s) => JSON.stringify(sqsWithBody(at(eventBridge(s), p, v))),
  },
  { name: "direct test event", paths: TEST_PATHS, batch: false, build: (p, v) => at(TEST_EVENT, p, v) },
  {
    name: "test event in SQS",
    paths: TEST_PATHS,
    batch: true,
    build: (p, v) => JSON.stringify(sqsWithBody(at(TEST_EVENT, p, v))),
  },
  {
    name: "SQS record metadata",
    paths: SQS_PATHS,
    batch: true,
    build: (p, v) => {
      const bad = sqsRecord(s3Notification(S3_RECORD), {
        messageId: "bad",
        messageAttributes: { traceId: { dataType: "String", stringValue: "t" } } as never,
      });
      return at({ Records: [goodSqs(), bad] }, ["Records", 1, ...p], v);
    },
  },
];

function expectShortMessage(error: unknown): void {
  expect(error).toBeInstanceOf(MalformedEventError);
  const message = (error as MalformedEventError).message;
  expect(message.length).toBeLessThan(MAX_MESSAGE);
  expect(message).not.toMatch(/[\n\r\u2028\u2029]/);
}

describe("parseInvocation with hostile JSON in every field of every envelope (property)", () => {
  for (const envelope of ENVELOPES) {
    it(`${envelope.name}: only MalformedEventError, short one-line messages, neighbours unaffected`, () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...envelope.paths),
          hostileJson,
          fc.constantFrom("aws.s3", "com.example.orders"),
          fc.constantFrom("accept" as const, "reject" as const),
          fc.constantFrom(undefined, "traceId", "constructor", "__proto__", "toString"),
          (path, value, source, messages, correlationAttribute) => {
            const input: unknown = JSON.parse(envelope.build(path, value, source));
            const options =
              correlationAttribute === undefined ? { messages } : { messages, correlationAttribute };
            let units: DeliveryUnit[];
            try {
              units = parseInvocation(input, options);
            } catch (e) {
              expectShortMessage(e);
              expect(envelope.batch).toBe(false);
              return;
            }
            for (const unit of units) {
              if (unit.error !== undefined) expectShortMessage(unit.error);
              expect(typeof unit.delivery.correlationId).toBe("string");
            }
            if (envelope.batch) {
              expect(units).toHaveLength(2);
              expect(units[0]?.error).toBeUndefined();
            }
          },
        ),
        { numRuns: 150 },
      );
    });
  }
});
