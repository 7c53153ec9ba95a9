import { describe, expect, it } from "vitest";
import { InvalidSequencerError, MalformedEventError, OptionsError } from "../../src/core/errors.js";
import type { MessageEvent, S3ObjectEvent, S3TestEvent } from "../../src/core/event.js";
import { type DeliveryUnit, parseInvocation } from "../../src/sources/index.js";
import { eventBridgeS3, s3Notification, s3Record, snsEnvelope, sqsEvent, sqsRecord } from "../kit/index.js";

function only(units: DeliveryUnit[]): DeliveryUnit {
  expect(units).toHaveLength(1);
  return units[0] as DeliveryUnit;
}

function s3Event(unit: DeliveryUnit, i = 0): S3ObjectEvent {
  const event = unit.events[i];
  expect(event?.kind).toBe("s3");
  return event as S3ObjectEvent;
}

function errorOf(unit: DeliveryUnit): MalformedEventError {
  expect(unit.error).toBeInstanceOf(MalformedEventError);
  return unit.error as MalformedEventError;
}

/** The record's JSON with one field of `s3.object` replaced (or deleted with `undefined`). */
function withObjectField(field: string, value: unknown): unknown {
  const record = JSON.parse(JSON.stringify(s3Record({ encodedKey: "a.txt" })));
  if (value === undefined) delete record.s3.object[field];
  else record.s3.object[field] = value;
  return record;
}

describe("options", () => {
  it("rejects unknown keys, naming the typo", () => {
    expect(() =>
      parseInvocation(s3Notification(s3Record({ encodedKey: "a" })), { messagez: "accept" } as never),
    ).toThrow(OptionsError);
    expect(() => parseInvocation({}, { messagez: "accept" } as never)).toThrow(/unknown option "messagez"/);
  });

  it("rejects a bad messages mode, an empty correlation attribute and non-object options", () => {
    expect(() => parseInvocation({}, { messages: "maybe" as "accept" })).toThrow(OptionsError);
    expect(() => parseInvocation({}, { correlationAttribute: "" })).toThrow(/correlationAttribute/);
    expect(() => parseInvocation({}, "accept" as never)).toThrow(OptionsError);
  });
});

describe("input that is no invocation at all throws", () => {
  it.each([
    ["null", null, /null, not an object/],
    ["a number", 42, /a number, not an object/],
    ["an array", [], /an array, not an object/],
    ["an empty object", {}, /unknown invocation shape/],
    ["Records that is not an array", { Records: "x" }, /expected an array/],
    ["empty Records", { Records: [] }, /Records is empty/],
  ])("%s", (_, input, message) => {
    expect(() => parseInvocation(input)).toThrow(MalformedEventError);
    expect(() => parseInvocation(input)).toThrow(message);
  });

  it("an SNS → Lambda event, with a hint", () => {
    const sns = {
      Records: [{ EventSource: "aws:sns", EventVersion: "1.0", Sns: snsEnvelope("{}", { messageId: "m" }) }],
    };
    expect(() => parseInvocation(sns)).toThrow(/"aws:sns".*subscribe an SQS queue/);
  });
});

describe("direct S3 notification", () => {
  it("normalizes every field and fills the delivery", () => {
    const unit = only(
      parseInvocation(
        s3Notification(
          s3Record({
            encodedKey: "dir/my+file%2B1.txt",
            sequencer: "0055aed6dcd90281e5",
            versionId: "v1",
            requestId: "REQ1",
            size: 12,
          }),
        ),
      ),
    );
    expect(unit.error).toBeUndefined();
    expect(unit.delivery).toEqual({ envelope: "s3", correlationId: "REQ1", recordIndex: 0 });
    expect(s3Event(unit)).toEqual({
      kind: "s3",
      bucket: "amzn-s3-demo-bucket",
      key: "dir/my file+1.txt",
      versionId: "v1",
      sequencer: "0055aed6dcd90281e5",
      position: "0055AED6DCD90281E500000000000000",
      operation: "created",
      eventName: "ObjectCreated:Put",
      eventTime: "2024-05-01T12:00:00.000Z",
      size: 12,
      etag: "d41d8cd98f00b204e9800998ecf8427e",
      requestId: "REQ1",
      region: "us-west-2",
      subject: "amzn-s3-demo-bucket/dir/my file+1.txt",
      identity: "0055AED6DCD90281E500000000000000:created",
    });
  });

  it("makes one unit per record; a bad record does not affect the others", () => {
    const units = parseInvocation(
      s3Notification(
        s3Record({ encodedKey: "one", requestId: "R0" }),
        s3Record({ encodedKey: "bad%", requestId: "R1" }),
        s3Record({ encodedKey: "three", requestId: "R2" }),
      ),
    );
    expect(units.map((u) => [u.delivery.recordIndex, u.delivery.correlationId, u.error?.path])).toEqual([
      [0, "R0", undefined],
      [1, "R1", "Records[1].s3.object.key"],
      [2, "R2", undefined],
    ]);
    expect(units[1]?.events).toEqual([]);
    expect(s3Event(units[2] as DeliveryUnit).key).toBe("three");
  });

  it('keeps versionId as given when a string (even "null"), drops null', () => {
    expect(
      s3Event(only(parseInvocation(s3Notification(withObjectField("versionId", "null"))))).versionId,
    ).toBe("null");
    const event = s3Event(only(parseInvocation(s3Notification(withObjectField("versionId", null)))));
    expect("versionId" in event).toBe(false);
  });

  it("reads size as a number, also from a digit string", () => {
    expect(s3Event(only(parseInvocation(s3Notification(withObjectField("size", "2048"))))).size).toBe(2048);
  });

  it.each([
    ["size", -1, "Records[0].s3.object.size", /non-negative integer/],
    ["size", "12a", "Records[0].s3.object.size", /non-negative integer/],
    ["size", 1.5, "Records[0].s3.object.size", /non-negative integer/],
    ["versionId", 5, "Records[0].s3.object.versionId", /expected a string, got a number/],
    ["eTag", false, "Records[0].s3.object.eTag", /expected a string/],
    ["key", undefined, "Records[0].s3.object.key", /^missing/],
    ["key", "", "Records[0].s3.object.key", /empty string/],
    ["key", 7, "Records[0].s3.object.key", /got a number/],
  ])("%s = %j is malformed at %s", (field, value, path, message) => {
    const error = errorOf(only(parseInvocation(s3Notification(withObjectField(field, value)))));
    expect(error.path).toBe(path);
    expect(error.message).toMatch(message);
  });

  it.each([
    ["eventName", undefined, "Records[1].eventName"],
    ["eventTime", "yesterday", "Records[1].eventTime"],
    ["eventSource", "aws:dynamodb", "Records[1].eventSource"],
    ["responseElements", "nope", "Records[1].responseElements"],
    ["s3", null, "Records[1].s3"],
  ])("record field %s = %j is malformed at %s", (field, value, path) => {
    const record = JSON.parse(JSON.stringify(s3Record({ encodedKey: "a" })));
    if (value === undefined) delete record[field];
    else record[field] = value;
    const units = parseInvocation(s3Notification(s3Record({ encodedKey: "fine" }), record));
    expect(units[0]?.error).toBeUndefined();
    expect(errorOf(units[1] as DeliveryUnit).path).toBe(path);
  });

  it("rejects a bucket name with a slash: it would make two objects share a subject", () => {
    const error = errorOf(
      only(parseInvocation(s3Notification(s3Record({ encodedKey: "k", bucket: "a/b" })))),
    );
    expect(error.path).toBe("Records[0].s3.bucket.name");
  });

  it("a record that is not an object is a unit error", () => {
    const units = parseInvocation({ Records: [s3Record({ encodedKey: "k" }), "junk"] });
    expect(errorOf(units[1] as DeliveryUnit).message).toBe(
      "expected an object, got a string (at Records[1])",
    );
    expect(units[1]?.delivery).toEqual({ envelope: "s3", correlationId: "Records[1]", recordIndex: 1 });
  });

  it.each([
    ["not hexadecimal", "0055AED6DCD9028XYZ"],
    ["longer than 32 digits", "0".repeat(33)],
    ["empty", ""],
  ])("an invalid sequencer (%s) is an InvalidSequencerError unit", (reason, sequencer) => {
    const error = errorOf(only(parseInvocation(s3Notification(s3Record({ encodedKey: "k", sequencer })))));
    expect(error).toBeInstanceOf(InvalidSequencerError);
    expect(error.path).toBe("Records[0].s3.object.sequencer");
    expect(error.message).toContain(reason);
  });

  it("events without a sequencer have no position and a hash identity that tells them apart", () => {
    const transition = (time: string) => {
      const record = withObjectField("sequencer", undefined) as { eventName: string; eventTime: string };
      record.eventName = "LifecycleTransition";
      record.eventTime = time;
      return s3Event(only(parseInvocation(s3Notification(record))));
    };
    const a = transition("2024-05-01T00:00:00.000Z");
    const b = transition("2024-05-02T00:00:00.000Z");
    expect(a.position).toBeUndefined();
    expect(a.sequencer).toBeUndefined();
    expect(a.operation).toBe("other");
    expect(a.identity).toMatch(/^h:/);
    expect(a.identity).not.toBe(b.identity);
    expect(transition("2024-05-01T00:00:00.000Z").identity).toBe(a.identity);
  });

  it.each([
    ["a stray %", "abc%", /invalid percent escape "%" at character 3/],
    ["a short escape", "abc%4", /invalid percent escape "%4"/],
    ["a non-hex escape", "%G1.txt", /invalid percent escape "%G1"/],
    ["escapes that are not UTF-8", "caf%C3%28.txt", /not valid UTF-8/],
    ["an overlong UTF-8 slash", "%C0%AF", /not valid UTF-8/],
  ])("a key with %s is malformed", (_, encodedKey, message) => {
    const error = errorOf(only(parseInvocation(s3Notification(s3Record({ encodedKey })))));
    expect(error.path).toBe("Records[0].s3.object.key");
    expect(error.message).toMatch(message);
  });

  it("decodes lower-case escapes too", () => {
    expect(s3Event(only(parseInvocation(s3Notification(s3Record({ encodedKey: "%c3%bc" }))))).key).toBe("ü");
  });

  it("accepts a decoded key of exactly 1,024 UTF-8 bytes and rejects 1,025", () => {
    const key1024 = `${"é".repeat(500)}${"a".repeat(24)}`; // 500 × 2 + 24 bytes
    const ok = s3Event(
      only(parseInvocation(s3Notification(s3Record({ encodedKey: encodeURIComponent(key1024) })))),
    );
    expect(ok.key).toBe(key1024);
    const error = errorOf(
      only(parseInvocation(s3Notification(s3Record({ encodedKey: encodeURIComponent(`${key1024}a`) })))),
    );
    expect(error.message).toMatch(/1025 bytes of UTF-8, longer than 1024/);
  });

  it("falls back to the record path as correlation id when there is no request id", () => {
    const record = JSON.parse(JSON.stringify(s3Record({ encodedKey: "k" })));
    delete record.responseElements;
    const unit = only(parseInvocation(s3Notification(record)));
    expect(unit.delivery.correlationId).toBe("Records[0]");
    expect(s3Event(unit).requestId).toBeUndefined();
  });
});

describe("direct s3:TestEvent", () => {
  it("becomes an s3-test event correlated by its request id", () => {
    const unit = only(
      parseInvocation({
        Service: "Amazon S3",
        Event: "s3:TestEvent",
        Time: "2014-10-13T15:57:02.089Z",
        Bucket: "bucketname",
        RequestId: "5582815E1AEA5ADF",
        HostId: "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE",
      }),
    );
    expect(unit.events).toEqual([
      {
        kind: "s3-test",
        bucket: "bucketname",
        requestId: "5582815E1AEA5ADF",
        eventTime: "2014-10-13T15:57:02.089Z",
      },
    ] satisfies S3TestEvent[]);
    expect(unit.delivery).toEqual({ envelope: "s3", correlationId: "5582815E1AEA5ADF", recordIndex: 0 });
  });

  it("without a bucket is a unit error, not a throw", () => {
    const unit = only(parseInvocation({ Service: "Amazon S3", Event: "s3:TestEvent" }));
    expect(errorOf(unit).path).toBe("Bucket");
  });
});

describe("SQS", () => {
  it("fills the SQS delivery metadata", () => {
    const record = sqsRecord(s3Notification(s3Record({ encodedKey: "k", requestId: "REQ" })), {
      messageId: "m-1",
      eventSourceARN: "arn:aws:sqs:us-west-2:123456789012:q.fifo",
      attributes: {
        ApproximateReceiveCount: "3",
        SentTimestamp: "1",
        SenderId: "S",
        ApproximateFirstReceiveTimestamp: "2",
        MessageGroupId: "group-7",
      },
      messageAttributes: {
        traceId: { stringValue: "t-1", dataType: "String" },
        priority: { stringValue: "5", dataType: "Number" },
        blob: { binaryValue: "AQID", dataType: "Binary" },
      },
    });
    const unit = only(parseInvocation(sqsEvent(record)));
    expect(unit.delivery).toEqual({
      envelope: "sqs-s3",
      correlationId: "REQ",
      recordIndex: 0,
      sqs: {
        messageId: "m-1",
        receiptHandle: "AQEB-m-1",
        receiveCount: 3,
        messageGroupId: "group-7",
        eventSourceArn: "arn:aws:sqs:us-west-2:123456789012:q.fifo",
        attributes: {
          ApproximateReceiveCount: "3",
          SentTimestamp: "1",
          SenderId: "S",
          ApproximateFirstReceiveTimestamp: "2",
          MessageGroupId: "group-7",
        },
        messageAttributes: { traceId: "t-1", priority: "5" },
      },
    });
  });

  it("uses the named message attribute as correlation id, else the request id", () => {
    const withAttribute = sqsRecord(s3Notification(s3Record({ encodedKey: "k", requestId: "REQ" })), {
      messageId: "m-1",
      messageAttributes: { traceId: { stringValue: "trace-1", dataType: "String" } },
    });
    const without = sqsRecord(s3Notification(s3Record({ encodedKey: "k", requestId: "REQ2" })), {
      messageId: "m-2",
    });
    const units = parseInvocation(sqsEvent(withAttribute, without), { correlationAttribute: "traceId" });
    expect(units.map((u) => u.delivery.correlationId)).toEqual(["trace-1", "REQ2"]);
  });

  it("reads a missing receive count as 1 and rejects a bad one", () => {
    const noCount = sqsRecord(s3Notification(s3Record({ encodedKey: "k" })), {
      messageId: "m-1",
      attributes: {} as never,
    });
    expect(only(parseInvocation(sqsEvent(noCount))).delivery.sqs?.receiveCount).toBe(1);
    for (const count of ["0", "abc", "1.5"]) {
      const bad = sqsRecord("{}", {
        messageId: "m-1",
        attributes: { ApproximateReceiveCount: count } as never,
      });
      const error = errorOf(only(parseInvocation(sqsEvent(bad))));
      expect(error.path).toBe("Records[0].attributes.ApproximateReceiveCount");
    }
  });

  it("a record without messageId or with a non-string body is a unit error, the batch goes on", () => {
    const noId = sqsRecord("{}", { messageId: "x" }) as unknown as Record<string, unknown>;
    delete noId.messageId;
    const objectBody = { ...sqsRecord("{}", { messageId: "m-2" }), body: { Records: [] } };
    const good = sqsRecord(s3Notification(s3Record({ encodedKey: "ok" })), { messageId: "m-3" });
    const units = parseInvocation(sqsEvent(noId, objectBody, good));
    expect(errorOf(units[0] as DeliveryUnit).path).toBe("Records[0].messageId");
    expect(units[0]?.delivery.correlationId).toBe("Records[0]");
    expect(errorOf(units[1] as DeliveryUnit).path).toBe("Records[1].body");
    expect(units[1]?.delivery.correlationId).toBe("m-2");
    expect(s3Event(units[2] as DeliveryUnit).key).toBe("ok");
  });

  it("a record with broken metadata keeps its id, group and queue as read leniently (recovered)", () => {
    const broken = {
      ...sqsRecord("{}", { messageId: "m-9", groupId: "g-1" }),
      receiptHandle: 7,
      eventSourceARN: "arn:aws:sqs:us-east-1:1:q.fifo",
    };
    const [unit] = parseInvocation(sqsEvent(broken));
    expect(unit?.delivery.sqs).toBeUndefined();
    expect(unit?.recovered).toEqual({
      messageId: "m-9",
      messageGroupId: "g-1",
      eventSourceArn: "arn:aws:sqs:us-east-1:1:q.fifo",
    });
    const body = sqsRecord("{}", { messageId: "m-10" });
    expect(only(parseInvocation(sqsEvent(body))).recovered).toBeUndefined();
  });

  it("a body with several records keeps the good ones and reports the first bad one", () => {
    const body = s3Notification(
      s3Record({ encodedKey: "good", requestId: "R-good" }),
      s3Record({ encodedKey: "bad%E0%A4" }),
    );
    const unit = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
    expect(unit.events.map((e) => (e as S3ObjectEvent).key)).toEqual(["good"]);
    expect(errorOf(unit).path).toBe("Records[0].body.Records[1].s3.object.key");
    expect(unit.delivery.envelope).toBe("sqs-s3");
  });

  it("an S3 test event body is an s3-test event", () => {
    const body = { Service: "Amazon S3", Event: "s3:TestEvent", Bucket: "b", RequestId: "RID" };
    const unit = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
    expect(unit.events).toEqual([{ kind: "s3-test", bucket: "b", requestId: "RID" }]);
    expect(unit.delivery).toMatchObject({ envelope: "sqs-s3", correlationId: "RID" });
  });

  describe("application messages", () => {
    const order = JSON.stringify({ orderId: "o-1" });

    it("are rejected by default with a unit error that says how to accept them", () => {
      const unit = only(parseInvocation(sqsEvent(sqsRecord(order, { messageId: "m-1" }))));
      expect(errorOf(unit).path).toBe("Records[0].body");
      expect(errorOf(unit).message).toMatch(/messages: "accept"/);
      expect(unit.delivery).toMatchObject({ envelope: "sqs", correlationId: "m-1" });
    });

    it("become MessageEvents with messages: accept, correlated by message id", () => {
      const unit = only(
        parseInvocation(sqsEvent(sqsRecord(order, { messageId: "m-1" })), { messages: "accept" }),
      );
      expect(unit.events).toEqual([
        { kind: "message", body: order, messageId: "m-1" },
      ] satisfies MessageEvent[]);
      expect(unit.delivery).toMatchObject({ envelope: "sqs", correlationId: "m-1" });
      expect(unit.error).toBeUndefined();
    });

    it("need not be JSON when accepted; bad JSON is an error when rejected", () => {
      const accepted = only(
        parseInvocation(sqsEvent(sqsRecord("plain text", { messageId: "m-1" })), { messages: "accept" }),
      );
      expect(accepted.events).toEqual([{ kind: "message", body: "plain text", messageId: "m-1" }]);
      const rejected = only(parseInvocation(sqsEvent(sqsRecord("plain text", { messageId: "m-1" }))));
      expect(errorOf(rejected).message).toMatch(/^body is not valid JSON: /);
    });

    it("a body with an empty Records array is not an S3 notification", () => {
      const unit = only(
        parseInvocation(sqsEvent(sqsRecord({ Records: [] }, { messageId: "m-1" })), { messages: "accept" }),
      );
      expect(unit.events[0]?.kind).toBe("message");
    });
  });

  describe("SNS envelope (raw delivery off)", () => {
    it("unwraps the S3 notification in Message and records the SNS ids", () => {
      const body = snsEnvelope(s3Notification(s3Record({ encodedKey: "a+b", requestId: "REQ" })), {
        messageId: "sns-1",
      });
      const unit = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
      expect(s3Event(unit).key).toBe("a b");
      expect(unit.delivery).toMatchObject({
        envelope: "sns-sqs-s3",
        correlationId: "REQ",
        sns: { messageId: "sns-1", topicArn: "arn:aws:sns:us-west-2:123456789012:s3-events" },
        sqs: { messageId: "m-1" },
      });
    });

    it("unwraps a test event", () => {
      const body = snsEnvelope(
        { Service: "Amazon S3", Event: "s3:TestEvent", Bucket: "b" },
        { messageId: "sns-1" },
      );
      const unit = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
      expect(unit.events).toEqual([{ kind: "s3-test", bucket: "b" }]);
      expect(unit.delivery).toMatchObject({ envelope: "sns-sqs-s3", correlationId: "m-1" });
    });

    it("reports errors inside Message with the Message path", () => {
      const body = snsEnvelope(s3Notification(s3Record({ encodedKey: "x", sequencer: "zz" })), {
        messageId: "sns-1",
      });
      const unit = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
      expect(errorOf(unit).path).toBe("Records[0].body.Message.Records[0].s3.object.sequencer");
      expect(unit.delivery.envelope).toBe("sns-sqs-s3");
    });

    it("an application message fanned out by SNS: its payload is the SNS Message", () => {
      const body = snsEnvelope({ orderId: "o-1" }, { messageId: "sns-1" });
      const accepted = only(
        parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" })), { messages: "accept" }),
      );
      expect(accepted.events).toEqual([{ kind: "message", body: '{"orderId":"o-1"}', messageId: "m-1" }]);
      expect(accepted.delivery).toMatchObject({ envelope: "sqs", sns: { messageId: "sns-1" } });
      const rejected = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
      expect(errorOf(rejected).path).toBe("Records[0].body.Message");
    });

    it("an envelope without MessageId is malformed", () => {
      const body = snsEnvelope("{}", { messageId: "sns-1" });
      delete body.MessageId;
      expect(errorOf(only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))))).path).toBe(
        "Records[0].body.MessageId",
      );
    });
  });

  describe("EventBridge event in the body", () => {
    it("becomes an S3 event correlated by the S3 request id", () => {
      const body = eventBridgeS3({
        key: "a+b",
        sequencer: "0064D3901D00059242",
        requestId: "REQ",
        id: "eb-1",
      });
      const unit = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
      expect(s3Event(unit)).toMatchObject({ key: "a+b", operation: "created", eventName: "Object Created" });
      expect(unit.delivery).toMatchObject({
        envelope: "sqs-eventbridge",
        correlationId: "REQ",
        eventBridge: { id: "eb-1", detailType: "Object Created", source: "aws.s3" },
      });
    });

    it("without request-id is correlated by the EventBridge id", () => {
      const body = eventBridgeS3({ key: "k", sequencer: "01", id: "eb-2" });
      expect(
        only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" })))).delivery.correlationId,
      ).toBe("eb-2");
    });

    it("from another source is an application message: body is the detail", () => {
      const body = {
        version: "0",
        id: "eb-3",
        "detail-type": "OrderPlaced",
        source: "com.example.orders",
        account: "111122223333",
        time: "2024-05-01T00:00:00Z",
        region: "us-east-1",
        resources: [],
        detail: { orderId: "o-9" },
      };
      const accepted = only(
        parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" })), { messages: "accept" }),
      );
      expect(accepted.events).toEqual([{ kind: "message", body: '{"orderId":"o-9"}', messageId: "m-1" }]);
      expect(accepted.delivery).toMatchObject({ envelope: "sqs-eventbridge", correlationId: "eb-3" });
      const rejected = only(parseInvocation(sqsEvent(sqsRecord(body, { messageId: "m-1" }))));
      expect(errorOf(rejected).message).toMatch(/EventBridge event from "com.example.orders"/);
    });
  });
});

/** `detail.object` of an EventBridge event built by eventBridgeS3. */
function objectOf(event: Record<string, unknown>): Record<string, unknown> {
  return (event.detail as Record<string, Record<string, unknown>>).object as Record<string, unknown>;
}

describe("direct EventBridge", () => {
  it("does not URL-decode the key: EventBridge carries it as stored", () => {
    const unit = only(parseInvocation(eventBridgeS3({ key: "a+b%20c/ü", sequencer: "617f08299329d189" })));
    expect(s3Event(unit).key).toBe("a+b%20c/ü");
    expect(s3Event(unit).subject).toBe("amzn-s3-demo-bucket/a+b%20c/ü");
  });

  it("fills eventBridge metadata; envelope eventbridge", () => {
    const unit = only(
      parseInvocation(eventBridgeS3({ key: "k", requestId: "REQ", id: "eb-1", sequencer: "01" })),
    );
    expect(unit.delivery).toEqual({
      envelope: "eventbridge",
      correlationId: "REQ",
      recordIndex: 0,
      eventBridge: { id: "eb-1", detailType: "Object Created", source: "aws.s3" },
    });
  });

  it.each([
    ["Object Created", "created"],
    ["Object Deleted", "removed"],
    ["Object Restore Completed", "other"],
    ["Object Tags Added", "other"],
    ["Object Storage Class Changed", "other"],
  ])("detail-type %s → operation %s", (detailType, operation) => {
    expect(s3Event(only(parseInvocation(eventBridgeS3({ key: "k", detailType })))).operation).toBe(operation);
  });

  it("validates the key length after nothing is decoded", () => {
    const error = errorOf(only(parseInvocation(eventBridgeS3({ key: "x".repeat(1025) }))));
    expect(error.path).toBe("detail.object.key");
    expect(error.message).toMatch(/1025 bytes/);
  });

  it.each([
    ["detail.object", (e: Record<string, unknown>) => delete (e.detail as Record<string, unknown>).object],
    ["time", (e: Record<string, unknown>) => (e.time = "not a time")],
    ["id", (e: Record<string, unknown>) => delete e.id],
    ["detail.object.size", (e: Record<string, unknown>) => (objectOf(e).size = "big")],
  ])("a malformed event is a unit error at %s", (path, mutate) => {
    const event = eventBridgeS3({ key: "k" }) as unknown as Record<string, unknown>;
    mutate(event);
    const unit = only(parseInvocation(event));
    expect(errorOf(unit).path).toBe(path);
    expect(unit.delivery.envelope).toBe("eventbridge");
  });

  it("an event from another source: a message when accepted, a unit error (not a throw) when rejected", () => {
    const event = {
      version: "0",
      id: "eb-7",
      "detail-type": "OrderPlaced",
      source: "com.example.orders",
      time: "2024-05-01T00:00:00Z",
      detail: { orderId: "o-1" },
    };
    expect(only(parseInvocation(event, { messages: "accept" })).events).toEqual([
      { kind: "message", body: '{"orderId":"o-1"}', messageId: "eb-7" },
    ]);
    const rejected = only(parseInvocation(event));
    expect(rejected.error).toBeInstanceOf(MalformedEventError);
    expect(rejected.delivery.correlationId).toBe("eb-7");
  });
});

describe("one S3 change through two envelopes", () => {
  it("has the same subject and identity whether it came as a notification or via EventBridge", () => {
    const viaSqs = s3Event(
      only(
        parseInvocation(
          sqsEvent(
            sqsRecord(
              s3Notification(s3Record({ encodedKey: "my+file%2B1.txt", sequencer: "0064D3901D00059242" })),
              { messageId: "m-1" },
            ),
          ),
        ),
      ),
    );
    const viaEventBridge = s3Event(
      only(parseInvocation(eventBridgeS3({ key: "my file+1.txt", sequencer: "0064d3901d00059242" }))),
    );
    expect(viaSqs.subject).toBe(viaEventBridge.subject);
    expect(viaSqs.identity).toBe(viaEventBridge.identity);
  });
});
