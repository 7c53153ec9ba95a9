import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  DURABLE_EXECUTION_NAME_PATTERN,
  dispatchedExecution,
  durableExecutionName,
  NotDispatchedError,
  PayloadValueError,
} from "../../src/durable/index.js";
import { dispatchedPayload } from "../../src/durable/payload.js";
import { parseInvocation } from "../../src/sources/parse-invocation.js";
import { eventBridgeS3, s3Notification, s3Record, sqsEvent, sqsRecord } from "../kit/events.js";

describe("durable execution names", () => {
  it("fit Lambda's alphabet and length for any subject and identity", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.string({ maxLength: 300 }), (subject, identity) => {
        const name = durableExecutionName(subject, identity);
        expect(name).toMatch(DURABLE_EXECUTION_NAME_PATTERN);
        expect(durableExecutionName(subject, identity)).toBe(name);
      }),
    );
  });

  it("tell events apart however subject and identity split", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), fc.string(), (s1, i1, s2, i2) => {
        fc.pre(s1 !== s2 || i1 !== i2);
        expect(durableExecutionName(s1, i1)).not.toBe(durableExecutionName(s2, i2));
      }),
    );
    expect(durableExecutionName("ab", "c")).not.toBe(durableExecutionName("a", "bc"));
  });

  it("keep a readable head of the subject", () => {
    expect(durableExecutionName("photos/cat.jpg", "x")).toMatch(/^photos-cat-jpg_/);
  });
});

describe("dispatched payload", () => {
  const record = s3Record({ key: "photos/cat one.jpg", sequencer: "0055AED6DCD90281E5", versionId: "v1" });

  function payloadOf(input: unknown): string {
    const [unit] = parseInvocation(input, { messages: "reject" });
    const event = unit?.events[0];
    if (event?.kind !== "s3") throw new Error("expected an S3 event");
    return canonicalJson(dispatchedPayload(event, event, { tag: "t" }));
  }

  it("is the same bytes for every delivery of one event, whatever the receive metadata", () => {
    const direct = payloadOf(s3Notification(record));
    const first = payloadOf(sqsEvent(sqsRecord(s3Notification(record), { receiveCount: 1 })));
    const third = payloadOf(sqsEvent(sqsRecord(s3Notification(record), { receiveCount: 3 })));
    expect(first).toBe(direct);
    expect(third).toBe(direct);
    // EventBridge names the event and its time otherwise: those fields are left out on purpose.
    const bridged = payloadOf(
      eventBridgeS3({
        key: "photos/cat one.jpg",
        sequencer: "0055AED6DCD90281E5",
        versionId: "v1",
        size: 1024,
        etag: "d41d8cd98f00b204e9800998ecf8427e",
      }),
    );
    expect(bridged).toBe(direct);
  });

  it("sorts keys at every level, so builders may write them in any order", () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}',
    );
    expect(() => canonicalJson({ n: 1n })).toThrow(PayloadValueError);
  });

  it("names its execution, checked by the durable side", () => {
    const payload = JSON.parse(payloadOf(s3Notification(record)));
    const execution = dispatchedExecution(payload);
    expect(execution.executionName).toBe(durableExecutionName(execution.subject, execution.identity));
    expect(() => dispatchedExecution({ hello: 1 })).toThrow(NotDispatchedError);
    const forged = { ...payload, execution: { ...payload.execution, subject: "other" } };
    expect(() => dispatchedExecution(forged)).toThrow(NotDispatchedError);
  });
});
