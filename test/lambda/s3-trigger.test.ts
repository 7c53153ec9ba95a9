import { join } from "node:path";
import type { Context } from "aws-lambda";
import { build } from "esbuild";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { s3Handler } from "../../src/lambda/index.js";
import { S3_TRIGGER } from "../../src/lambda/s3-trigger.js";
import { parseResolved } from "../../src/sources/parse-invocation.js";
import type { ResolvedParseOptions } from "../../src/sources/types.js";
import { adversarialText } from "../kit/adversarial.js";
import {
  captureOutput,
  dynamodbRecord,
  eventBridgeS3,
  kinesisRecord,
  lambdaContext,
  s3Notification,
  s3Record,
  s3TestEvent,
  sqsEvent,
  sqsRecord,
  streamEvent,
} from "../kit/index.js";
import { deepJson, splice } from "../sources/hostile.js";

/*
 * s3Handler's own trigger kit (src/lambda/s3-trigger.ts): it parses direct S3 invocations exactly as every other
 * wrapper's parser does (S3 events from EventBridge too), refuses the other triggers' invocations by name, and keeps the other sources' parsers and
 * the SQS heartbeat out of an S3 function's bundle.
 */

type Wrapped = (event: unknown, context: Context) => Promise<unknown>;

const OPTIONS: ResolvedParseOptions = { messages: "reject" };

describe("s3Handler's trigger kit", () => {
  it("parses S3 notifications and the test event as parseInvocation does, malformed records included", () => {
    const inputs: unknown[] = [
      s3Notification(s3Record({ key: "a/b.jpg" })),
      s3Notification(s3Record({ key: "a%20b.jpg" }), s3Record({ key: "c.jpg", size: 5 })),
      s3TestEvent(),
      { ...s3TestEvent(), Records: [] },
      s3Notification(s3Record({ key: "ok.jpg" }), { ...s3Record({ key: "x" }), s3: "broken" }),
      s3Notification({ ...s3Record({ key: "x" }), eventSource: "aws:s3", eventTime: "yesterday" }),
      s3Notification(s3Record({ key: "ok.jpg" }), "not a record"),
      eventBridgeS3({ key: "a/b.jpg" }),
      { ...eventBridgeS3({ key: "a/b.jpg" }), detail: "broken" },
      { ...eventBridgeS3({ key: "a/b.jpg" }), id: 7 },
    ];
    for (const input of inputs) {
      expect(S3_TRIGGER.parse(input, OPTIONS, "s3Handler")).toEqual(parseResolved(input, OPTIONS));
    }
  });

  it.each([
    ["an SQS batch", sqsEvent(sqsRecord({ order: 1 })), /s3Handler got an SQS batch; use sqsHandler/],
    [
      "an EventBridge event from another source",
      { ...eventBridgeS3({ key: "k" }), source: "shop.orders", "detail-type": "Order placed" },
      /s3Handler got an EventBridge event from another source; use eventBridgeHandler/,
    ],
    [
      "a Kinesis batch",
      streamEvent(kinesisRecord({ partitionKey: "p", data: { a: 1 } })),
      /s3Handler got a Kinesis batch; use kinesisHandler/,
    ],
    [
      "a DynamoDB Streams batch",
      streamEvent(dynamodbRecord({ eventName: "INSERT", keys: { pk: { S: "a" } } })),
      /s3Handler got a DynamoDB Streams batch; use dynamodbStreamHandler/,
    ],
    ["no invocation", { hello: "world" }, /unknown invocation shape; expected an S3 notification/],
    ["not an object", "s3", /invocation is a string/],
    ["no records", { Records: [] }, /Records is empty/],
    ["records of no source", { Records: [{ eventSource: "aws:sns" }] }, /no record has eventSource aws:s3/],
  ])("refuses %s, counted as malformed", async (_name, input, message) => {
    const o = captureOutput();
    const handler = s3Handler(async () => {}, { store: new MemoryStore() }) as Wrapped;
    await expect(handler(input, lambdaContext())).rejects.toThrow(message);
    expect(o.metrics()).toMatchObject({ malformed: 1 });
  });

  it("keeps the other sources' parsers, their key derivations and the visibility heartbeat out of an S3 function's bundle", async () => {
    const root = join(import.meta.dirname, "..", "..");
    const result = await build({
      absWorkingDir: root,
      stdin: {
        contents: `import { s3Handler } from "./src/lambda/index.js";
export const handler = s3Handler(async () => {}, { store: undefined });`,
        resolveDir: root,
        loader: "ts",
      },
      bundle: true,
      write: false,
      format: "esm",
      platform: "node",
      packages: "external",
      metafile: true,
      logLevel: "silent",
    });
    // What the output holds: esbuild lists every file it read, those it shook out with 0 bytes.
    const [output] = Object.values(result.metafile.outputs);
    const inputs = Object.entries(output?.inputs ?? {})
      .filter(([, i]) => i.bytesInOutput > 0)
      .map(([path]) => path);
    expect(inputs).toContain("src/sources/s3-notification.ts");
    for (const absent of [
      "src/sources/parse-invocation.ts",
      "src/sources/sqs.ts",
      "src/sources/payload.ts",
      "src/sources/kinesis.ts",
      "src/sources/dynamodb-stream.ts",
      "src/lambda/visibility-heartbeat.ts",
      "src/lambda/derive-keys.ts",
      "src/lambda/fifo-producer.ts",
    ]) {
      expect(inputs).not.toContain(absent);
    }
  });
});

describe("s3Handler's trigger kit against hostile input", () => {
  // Hostile values (lone surrogates, percent signs, prototype names, deep nesting, any JSON) at every field of the
  // three shapes the kit takes: it answers exactly as the general parser, or throws the same MalformedEventError.
  const hostile = fc.oneof(
    fc.json(),
    adversarialText().map((t) => JSON.stringify(t)),
    fc.constantFrom(
      '"\\ud800"',
      '"a\\udc00b"',
      '"%E0%A4%A"',
      '"__proto__"',
      '{"__proto__":{"a":1}}',
      "null",
      "[]",
    ),
    fc.integer({ min: 1, max: 40 }).map((depth) => deepJson(depth)),
  );
  const shapes: [string, unknown, (string | number)[][]][] = [
    [
      "direct S3",
      s3Notification(s3Record({ key: "k" }), s3Record({ key: "k2" })),
      [
        ["Records", 1],
        ["Records", 1, "s3", "object", "key"],
        ["Records", 1, "s3", "object", "sequencer"],
        ["Records", 1, "eventName"],
        ["Records", 1, "eventSource"],
        ["Records", 1, "responseElements"],
      ],
    ],
    [
      "S3 from EventBridge",
      eventBridgeS3({ key: "k" }),
      [
        ["id"],
        ["source"],
        ["detail-type"],
        ["time"],
        ["detail"],
        ["detail", "object", "key"],
        ["detail", "object", "sequencer"],
        ["detail", "request-id"],
      ],
    ],
    ["test event", s3TestEvent(), [["Event"], ["Bucket"], ["RequestId"], ["Time"]]],
  ];
  const outcome = (f: () => unknown): { units?: unknown; malformed?: string } => {
    try {
      return { units: f() };
    } catch (e) {
      if (!(e instanceof MalformedEventError)) throw e;
      return { malformed: e.message };
    }
  };
  it.each(shapes)("%s", (_name, template, paths) => {
    fc.assert(
      fc.property(fc.constantFrom(...paths), hostile, (path, value) => {
        const input: unknown = splice(template, path, value);
        const ours = outcome(() => S3_TRIGGER.parse(input, OPTIONS, "s3Handler"));
        const general = outcome(() => parseResolved(input, OPTIONS));
        // The kit refuses another trigger's shape by name where the general parser takes it: only S3 shapes compare.
        if ("malformed" in ours && /use \w+Handler/.test(ours.malformed ?? "")) return;
        // The same units; an invocation the general parser refuses whole, refused whole (each names what it takes).
        if ("units" in general) expect(ours).toEqual(general);
        else expect(Object.keys(ours)).toEqual(["malformed"]);
      }),
      { numRuns: 300 },
    );
  });
});
