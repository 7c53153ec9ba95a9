import { describe, expect, it } from "vitest";
import { InvalidSequencerError, MalformedEventError, OptionsError } from "../../src/core/errors.js";
import { parseInvocation } from "../../src/sources/index.js";
import type { DeliveryUnit } from "../../src/sources/types.js";
import { eventBridgeS3, s3Notification, s3Record, snsEnvelope, sqsEvent, sqsRecord } from "../kit/index.js";
import { deepJson, splice, spliceJson } from "./hostile.js";

/** Regressions for inputs found by fuzzing: each gets a typed error for its own unit, never a throw. */

const DEEP = deepJson(100_000);
const MAX_MESSAGE = 400;

function errorOf(unit: DeliveryUnit | undefined): MalformedEventError {
  expect(unit?.error).toBeInstanceOf(MalformedEventError);
  const error = unit?.error as MalformedEventError;
  expect(error.message.length).toBeLessThan(MAX_MESSAGE);
  expect(error.message).not.toContain("\n");
  return error;
}

describe("deeply nested values (JSON.stringify would overflow the stack)", () => {
  const good = s3Record({ encodedKey: "good" });
  const record = s3Record({ encodedKey: "deep" });

  it.each([
    ["eventSource", ["eventSource"], "Records[1].eventSource"],
    ["size", ["s3", "object", "size"], "Records[1].s3.object.size"],
    ["sequencer", ["s3", "object", "sequencer"], "Records[1].s3.object.sequencer"],
  ])("in a direct S3 record's %s: that record only is malformed", (_, path, errorPath) => {
    const units = parseInvocation(s3Notification(good, splice(record, path, DEEP)));
    expect(units).toHaveLength(2);
    expect(units[0]?.error).toBeUndefined();
    expect(errorOf(units[1]).path).toBe(errorPath);
  });

  it("in the sequencer inside an SQS body: an InvalidSequencerError for that message only", () => {
    const body = spliceJson(s3Notification(record), ["Records", 0, "s3", "object", "sequencer"], DEEP);
    const units = parseInvocation(
      sqsEvent(sqsRecord(s3Notification(good), { messageId: "ok" }), sqsRecord(body, { messageId: "deep" })),
    );
    expect(units[0]?.error).toBeUndefined();
    const error = errorOf(units[1]);
    expect(error).toBeInstanceOf(InvalidSequencerError);
    expect(error.path).toBe("Records[1].body.Records[0].s3.object.sequencer");
  });

  it("as the eventSource of the only record: the invocation is rejected with a MalformedEventError", () => {
    expect(() => parseInvocation({ Records: [JSON.parse(`{"eventSource":${DEEP}}`)] })).toThrow(
      MalformedEventError,
    );
  });

  it("as an EventBridge detail of an application message: malformed at detail, not a RangeError", () => {
    const event = splice({ ...eventBridgeS3({ key: "k" }), source: "com.example.orders" }, ["detail"], DEEP);
    const [direct] = parseInvocation(event, { messages: "accept" });
    expect(errorOf(direct).path).toBe("detail");
    const body = spliceJson(
      { ...eventBridgeS3({ key: "k" }), source: "com.example.orders" },
      ["detail"],
      DEEP,
    );
    const [viaSqs] = parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m" })), { messages: "accept" });
    expect(errorOf(viaSqs).path).toBe("Records[0].body.detail");
  });

  it("as an EventBridge detail with messages rejected: the rejection, not a serialization error", () => {
    const body = spliceJson(
      { ...eventBridgeS3({ key: "k" }), source: "com.example.orders" },
      ["detail"],
      DEEP,
    );
    const [unit] = parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m" })));
    expect(errorOf(unit).message).toMatch(/messages: "accept"/);
  });
});

describe("long values are echoed capped, with their length", () => {
  it("a 200,000-character sequencer gives a short message", () => {
    const units = parseInvocation(
      s3Notification(s3Record({ encodedKey: "k", sequencer: "A".repeat(200_000) })),
    );
    const error = errorOf(units[0]);
    expect(error).toBeInstanceOf(InvalidSequencerError);
    expect(error.message).toContain("(200000 characters)");
  });

  it("a long message attribute name is capped in the path", () => {
    const record = sqsRecord(s3Notification(s3Record({ encodedKey: "k" })), {
      messageId: "m",
      messageAttributes: { ["n".repeat(100_000)]: "not an object" } as never,
    });
    expect(errorOf(parseInvocation(sqsEvent(record))[0]).path.length).toBeLessThan(MAX_MESSAGE);
  });

  it("a bad-JSON body is reported on one line even when the parser quotes a newline", () => {
    const [unit] = parseInvocation(sqsEvent(sqsRecord('{"a":\n x', { messageId: "m" })));
    expect(errorOf(unit).message).toMatch(/^body is not valid JSON: /);
  });
});

describe("ApproximateReceiveCount must be a safe positive integer", () => {
  const withCount = (count: string) =>
    parseInvocation(
      sqsEvent(
        sqsRecord(s3Notification(s3Record({ encodedKey: "k" })), {
          messageId: "m",
          attributes: { ApproximateReceiveCount: count } as never,
        }),
      ),
    )[0];

  it.each(["9007199254740993", "1e400", "0", "01", "-1", "1.5", " 1"])("rejects %j", (count) => {
    expect(errorOf(withCount(count)).path).toBe("Records[0].attributes.ApproximateReceiveCount");
  });

  it("accepts 2^53-1", () => {
    expect(withCount("9007199254740991")?.delivery.sqs?.receiveCount).toBe(9007199254740991);
  });
});

describe("correlationAttribute reads own message attributes only", () => {
  const record = (attributes: Record<string, unknown>) =>
    sqsRecord(s3Notification(s3Record({ encodedKey: "k", requestId: "" })), {
      messageId: "msg-1",
      messageAttributes: attributes as never,
    });

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"])(
    "%s names no inherited property",
    (name) => {
      const [unit] = parseInvocation(sqsEvent(record({})), { correlationAttribute: name });
      expect(unit?.delivery.correlationId).toBe("msg-1");
    },
  );

  it("an attribute really named __proto__ is read, and kept as an own attribute", () => {
    const attributes = JSON.parse('{"__proto__":{"dataType":"String","stringValue":"trace-7"}}');
    const [unit] = parseInvocation(sqsEvent(record(attributes)), { correlationAttribute: "__proto__" });
    expect(unit?.delivery.correlationId).toBe("trace-7");
    expect(Object.hasOwn(unit?.delivery.sqs?.messageAttributes ?? {}, "__proto__")).toBe(true);
  });
});

describe("an s3:TestEvent carrying Records is malformed, never silently dropped", () => {
  const both = {
    Service: "Amazon S3",
    Event: "s3:TestEvent",
    Bucket: "b",
    ...s3Notification(s3Record({ encodedKey: "k" })),
  };

  it("in an SQS body", () => {
    const [unit] = parseInvocation(sqsEvent(sqsRecord(both, { messageId: "m" })));
    expect(unit?.events).toEqual([]);
    expect(errorOf(unit).path).toBe("Records[0].body.Records");
  });

  it("in an SNS Message", () => {
    const [unit] = parseInvocation(
      sqsEvent(sqsRecord(snsEnvelope(both, { messageId: "s" }), { messageId: "m" })),
    );
    expect(unit?.events).toEqual([]);
    expect(errorOf(unit).path).toBe("Records[0].body.Message.Records");
  });

  it("as a direct invocation: one malformed unit", () => {
    const units = parseInvocation(both);
    expect(units).toHaveLength(1);
    expect(units[0]?.events).toEqual([]);
    expect(errorOf(units[0]).path).toBe("Records");
  });
});

describe("option values with no primitive conversion are an OptionsError", () => {
  it.each([{ toString: 1 }, Object.create(null), Symbol("s")])("messages: %s", (value) => {
    expect(() => parseInvocation(s3Notification(), { messages: value as never })).toThrow(OptionsError);
  });

  it("a long bad value is capped in the message", () => {
    expect(() => parseInvocation(s3Notification(), { messages: "x".repeat(100_000) as never })).toThrow(
      /\(100000 characters\)$/,
    );
  });
});
