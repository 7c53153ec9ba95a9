import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { NumberValueImpl } from "@aws-sdk/util-dynamodb";
import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import type { DynamoDBChangeEvent, KinesisRecordEvent } from "../../src/core/event.js";
import { MalformedKeyError } from "../../src/core/key-text.js";
import { type DeliveryUnit, parseInvocation } from "../../src/sources/index.js";

const fixtures = fileURLToPath(new URL("../fixtures/events/", import.meta.url));
const fixture = (name: string) =>
  JSON.parse(readFileSync(join(fixtures, name), "utf8")) as { Records: unknown[] };

const K1 = "49590338271490256608559692538361571095921575989136588898";
const K2 = "49590338271490256608559692540925702759324208523137515618";

function kinesisOf(unit: DeliveryUnit | undefined): KinesisRecordEvent {
  expect(unit?.error).toBeUndefined();
  expect(unit?.events).toHaveLength(1);
  return unit?.events[0] as KinesisRecordEvent;
}

function changeOf(unit: DeliveryUnit | undefined): DynamoDBChangeEvent {
  expect(unit?.error).toBeUndefined();
  expect(unit?.events).toHaveLength(1);
  return unit?.events[0] as DynamoDBChangeEvent;
}

function errorOf(unit: DeliveryUnit | undefined): MalformedEventError {
  expect(unit?.error).toBeInstanceOf(MalformedEventError);
  expect(unit?.events).toEqual([]);
  return unit?.error as MalformedEventError;
}

/** A copy of a fixture whose first record has `value` at `path` (deleted for undefined). */
function edited(name: string, path: readonly string[], value: unknown): unknown {
  const event = fixture(name);
  let node = event.Records[0] as Record<string, unknown>;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string, unknown>;
  const last = path[path.length - 1] as string;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return event;
}

describe("Kinesis records", () => {
  it("the Lambda guide's batch: one unit per record, with stream, shard, sequence number and data", () => {
    const units = parseInvocation(fixture("kinesis-batch.json"));
    expect(units).toHaveLength(2);
    const [a, b] = units.map(kinesisOf) as [KinesisRecordEvent, KinesisRecordEvent];
    expect(units[0]?.delivery).toEqual({
      envelope: "kinesis",
      correlationId: `shardId-000000000006:${K1}`,
      recordIndex: 0,
      stream: {
        eventSourceArn: "arn:aws:kinesis:us-east-2:123456789012:stream/lambda-stream",
        shardId: "shardId-000000000006",
        sequenceNumber: K1,
      },
    });
    expect(a).toMatchObject({
      kind: "kinesis",
      streamName: "lambda-stream",
      partitionKey: "1",
      sequenceNumber: K1,
      position: `056${K1}`,
      approximateArrivalTimestamp: 1545084650.987,
    });
    expect(Buffer.from(a.data).toString("utf8")).toBe("Hello, this is a test.");
    expect("json" in a).toBe(false);
    expect(b.position > a.position).toBe(true);
    expect(Buffer.from(b.data).toString("utf8")).toBe("This is only a test.");
  });

  it("data that is JSON is parsed into `json`; binary data is not", () => {
    const [json, binary] = parseInvocation(fixture("kinesis-json.json")).map(kinesisOf);
    expect(json?.json).toEqual({ orderId: "o-1", version: 2 });
    expect(binary && "json" in binary).toBe(false);
    expect([...(binary?.data ?? [])]).toEqual([0xff, 0x00, 0x10]);
    const nullData = edited("kinesis-json.json", ["kinesis", "data"], Buffer.from("null").toString("base64"));
    const parsed = kinesisOf(parseInvocation(nullData)[0]);
    expect("json" in parsed && parsed.json === null).toBe(true);
  });

  it.each([
    ["data that is not base64", ["kinesis", "data"], "not base64!", "Records[0].kinesis.data"],
    ["no sequence number", ["kinesis", "sequenceNumber"], undefined, "Records[0].kinesis.sequenceNumber"],
    [
      "a sequence number that is not decimal",
      ["kinesis", "sequenceNumber"],
      "4959x",
      "Records[0].kinesis.sequenceNumber",
    ],
    ["an eventID of another record", ["eventID"], `shardId-000000000006:${K2}`, "Records[0].eventID"],
    ["an eventID without a shard", ["eventID"], K1, "Records[0].eventID"],
    ["no partition key", ["kinesis", "partitionKey"], undefined, "Records[0].kinesis.partitionKey"],
    [
      "an ARN that names no stream",
      ["eventSourceARN"],
      "arn:aws:sqs:us-east-2:1:q",
      "Records[0].eventSourceARN",
    ],
    [
      "no arrival time",
      ["kinesis", "approximateArrivalTimestamp"],
      "soon",
      "Records[0].kinesis.approximateArrivalTimestamp",
    ],
    ["no kinesis object", ["kinesis"], [], "Records[0].kinesis"],
  ])("%s: that record is malformed (path %s), the other is not", (_, at, value, path) => {
    const units = parseInvocation(edited("kinesis-batch.json", at, value));
    expect(units).toHaveLength(2);
    expect(errorOf(units[0]).path).toBe(path);
    kinesisOf(units[1]);
  });

  it("a partition key with a lone surrogate breaks the key rule: a MalformedKeyError", () => {
    const units = parseInvocation(edited("kinesis-batch.json", ["kinesis", "partitionKey"], "a\uD800"));
    expect(errorOf(units[0])).toBeInstanceOf(MalformedKeyError);
  });

  it("a tumbling-window invocation is refused whole", () => {
    expect(() => parseInvocation(fixture("malformed-kinesis-tumbling-window.json"))).toThrow(
      /tumbling windows are not supported/,
    );
    for (const field of ["window", "state", "isFinalInvokeForWindow"]) {
      const event = { ...fixture("kinesis-batch.json"), [field]: {} };
      expect(() => parseInvocation(event)).toThrow(MalformedEventError);
    }
  });
});

describe("DynamoDB Streams records", () => {
  it("INSERT, MODIFY, REMOVE of one item: keys and images unmarshalled, one item subject, rising positions", () => {
    const units = parseInvocation(fixture("dynamodb-insert-modify-remove.json"));
    const [insert, modify, remove] = units.map(changeOf) as DynamoDBChangeEvent[];
    expect(units[0]?.delivery).toEqual({
      envelope: "dynamodb-streams",
      correlationId: "c4ca4238a0b923820dcc509a6f75849b",
      recordIndex: 0,
      stream: {
        eventSourceArn:
          "arn:aws:dynamodb:us-west-2:123456789012:table/ExampleTableWithStream/stream/2015-06-27T00:48:05.899",
        sequenceNumber: "4421584500000000017450439091",
      },
    });
    expect(insert).toEqual({
      kind: "dynamodb",
      eventName: "INSERT",
      tableName: "ExampleTableWithStream",
      keys: { Id: 101 },
      newImage: { Message: "New item!", Id: 101 },
      viewType: "NEW_AND_OLD_IMAGES",
      sequenceNumber: "4421584500000000017450439091",
      position: "0284421584500000000017450439091",
      approximateCreationDateTime: 1428537600,
      removal: false,
      ttlExpired: false,
      item: 'ExampleTableWithStream/{"Id":{"N":"101"}}',
      eventId: "c4ca4238a0b923820dcc509a6f75849b",
    });
    expect(modify).toMatchObject({
      eventName: "MODIFY",
      oldImage: { Message: "New item!" },
      newImage: { Message: "This item has changed" },
      removal: false,
    });
    expect(remove).toMatchObject({ eventName: "REMOVE", removal: true, ttlExpired: false });
    expect(remove && "newImage" in remove).toBe(false);
    expect(new Set([insert?.item, modify?.item, remove?.item]).size).toBe(1);
    expect(insert!.position < modify!.position && modify!.position < remove!.position).toBe(true);
  });

  it("a REMOVE by TTL says so; the same REMOVE by a user does not", () => {
    const ttl = changeOf(parseInvocation(fixture("dynamodb-ttl-remove.json"))[0]);
    expect(ttl).toMatchObject({ removal: true, ttlExpired: true, viewType: "OLD_IMAGE" });
    expect(ttl.oldImage).toEqual({
      pk: "session#42",
      sk: 7,
      expiresAt: 1700000000,
      tags: new Set(["a", "b"]),
    });
    const byUser = edited("dynamodb-ttl-remove.json", ["userIdentity"], {
      type: "User",
      principalId: "AIDAEXAMPLE",
    });
    expect(changeOf(parseInvocation(byUser)[0]).ttlExpired).toBe(false);
  });

  it("KEYS_ONLY: keys only, in a canonical subject whatever order they came in", () => {
    const change = changeOf(parseInvocation(fixture("dynamodb-keys-only.json"))[0]);
    expect(change).toMatchObject({ viewType: "KEYS_ONLY", keys: { pk: "user#1", sk: "2024-01-01" } });
    expect("newImage" in change || "oldImage" in change).toBe(false);
    expect(change.item).toBe('ExampleTableWithStream/{"pk":{"S":"user#1"},"sk":{"S":"2024-01-01"}}');
  });

  it("NEW_IMAGE: every attribute type; numbers a number only when exact", () => {
    const change = changeOf(parseInvocation(fixture("dynamodb-new-image.json"))[0]);
    const image = change.newImage as Record<string, unknown>;
    expect(image.balance).toBeInstanceOf(NumberValueImpl);
    expect(String(image.balance)).toBe("12345678901234567890.5");
    expect(image.avatar).toEqual(new Uint8Array([0, 1, 2]));
    expect(image).toMatchObject({ pk: "user#1", active: true, nickname: null, scores: new Set([1, 2.5]) });
    expect(image.profile).toEqual({ city: "Oslo", visits: [3, "x"] });
  });

  it("OLD_IMAGE: the old image only", () => {
    const change = changeOf(parseInvocation(fixture("dynamodb-old-image.json"))[0]);
    expect(change).toMatchObject({ viewType: "OLD_IMAGE", oldImage: { pk: "user#1", balance: 10 } });
    expect("newImage" in change).toBe(false);
  });

  it("an attribute named __proto__ is an own attribute, not the image's prototype", () => {
    const event = edited(
      "dynamodb-old-image.json",
      ["dynamodb", "OldImage"],
      JSON.parse('{"__proto__": {"S": "x"}, "pk": {"S": "user#1"}}'),
    );
    const image = changeOf(parseInvocation(event)[0]).oldImage as Record<string, unknown>;
    expect(Object.getPrototypeOf(image)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(image, "__proto__")?.value).toBe("x");
  });

  it.each([
    ["an unknown eventName", ["eventName"], "UPSERT", "Records[0].eventName"],
    ["no Keys", ["dynamodb", "Keys"], undefined, "Records[0].dynamodb.Keys"],
    ["a key that is a map", ["dynamodb", "Keys"], { Id: { M: {} } }, "Records[0].dynamodb.Keys.Id"],
    [
      "a number that is not one",
      ["dynamodb", "NewImage", "Id"],
      { N: "ten" },
      "Records[0].dynamodb.NewImage.Id.N",
    ],
    [
      "two types in one value",
      ["dynamodb", "NewImage", "Id"],
      { N: "1", S: "1" },
      "Records[0].dynamodb.NewImage.Id",
    ],
    ["an unknown view type", ["dynamodb", "StreamViewType"], "ALL", "Records[0].dynamodb.StreamViewType"],
    ["a bad sequence number", ["dynamodb", "SequenceNumber"], "-1", "Records[0].dynamodb.SequenceNumber"],
    [
      "an ARN naming no table",
      ["eventSourceARN"],
      "arn:aws:dynamodb:us-west-2:1:stream/x",
      "Records[0].eventSourceARN",
    ],
    [
      "binary that is not base64",
      ["dynamodb", "NewImage", "Id"],
      { B: "%%" },
      "Records[0].dynamodb.NewImage.Id.B",
    ],
  ])("%s: that record is malformed (path %s), the others are not", (_, at, value, path) => {
    const units = parseInvocation(edited("dynamodb-insert-modify-remove.json", at, value));
    expect(errorOf(units[0]).path).toBe(path);
    changeOf(units[1]);
    changeOf(units[2]);
  });

  it("a document nested deeper than DynamoDB allows is malformed, not a stack overflow", () => {
    let deep: unknown = { S: "leaf" };
    for (let i = 0; i < 5000; i++) deep = { L: [deep] };
    const units = parseInvocation(edited("dynamodb-old-image.json", ["dynamodb", "OldImage"], { deep }));
    expect(errorOf(units[0]).message).toMatch(/nested deeper than 32 levels/);
  });
});
