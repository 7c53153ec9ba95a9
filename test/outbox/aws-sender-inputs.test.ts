import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import {
  eventBridgePutEventsInput,
  snsPublishInput,
  sqsSendMessageInput,
} from "../../src/outbox/aws-requests.js";
import { awsOutboxSender } from "../../src/outbox/aws-sender.js";
import {
  EventBridgeEntryFailedError,
  OutboxEntryInvalidError,
  OutboxSendError,
} from "../../src/outbox/errors.js";
import { OUTBOX_MESSAGE_ID_ATTRIBUTE, outboxMessageId, outboxOrder } from "../../src/outbox/message-id.js";
import type { Destination, OutboxEntry } from "../../src/outbox/types.js";

const BUS: Destination = {
  kind: "eventbridge",
  eventBusName: "orders",
  source: "shop.orders",
  detailType: "OrderCreated",
};

function entry(
  destination: Destination,
  body = '{"orderId":"o-1","total":3}',
  extra: Partial<OutboxEntry> = {},
) {
  return {
    messageId: outboxMessageId("order-1", "v1", "#1"),
    subject: "order-1",
    order: outboxOrder(1, 0),
    destination,
    body,
    groupId: "order-1",
    createdAtMs: 0,
    ...extra,
  } satisfies OutboxEntry;
}

describe("the requests of awsOutboxSender", () => {
  it("PutEvents: one event on the bus, its detail the body's object with the message id", () => {
    const e = entry(BUS);
    const input = eventBridgePutEventsInput(e);
    expect(input.Entries).toHaveLength(1);
    const [event] = input.Entries!;
    expect(event).toMatchObject({
      EventBusName: "orders",
      Source: "shop.orders",
      DetailType: "OrderCreated",
    });
    expect(JSON.parse(event!.Detail!)).toEqual({
      orderId: "o-1",
      total: 3,
      [OUTBOX_MESSAGE_ID_ATTRIBUTE]: e.messageId,
    });
  });

  it("PutEvents: the message id replaces a detail field of its name", () => {
    const e = entry(BUS, JSON.stringify({ [OUTBOX_MESSAGE_ID_ATTRIBUTE]: "forged" }));
    const detail = JSON.parse(eventBridgePutEventsInput(e).Entries![0]!.Detail!) as Record<string, string>;
    expect(detail[OUTBOX_MESSAGE_ID_ATTRIBUTE]).toBe(e.messageId);
  });

  it("PutEvents: refuses a body that is not a JSON object", () => {
    for (const body of ["plain text", "[1,2]", "null", '"a string"', "42"]) {
      expect(() => eventBridgePutEventsInput(entry(BUS, body))).toThrow(OutboxEntryInvalidError);
    }
  });

  it("SQS and SNS: FIFO ids only for .fifo names, within SQS's id rule", () => {
    const standard = sqsSendMessageInput(entry({ kind: "sqs", queueUrl: "https://sqs/1/q" }));
    expect(standard.MessageGroupId).toBeUndefined();
    expect(standard.MessageDeduplicationId).toBeUndefined();
    const longGroup = "g".repeat(300);
    const fifo = snsPublishInput(
      entry({ kind: "sns", topicArn: "arn:aws:sns:us-east-1:1:t.fifo" }, "x", { groupId: longGroup }),
    );
    expect(fifo.MessageGroupId).toMatch(/^h:[A-Za-z0-9_-]+$/);
    expect(fifo.MessageDeduplicationId).toBe(entry(BUS).messageId);
    expect(fifo.MessageAttributes?.[OUTBOX_MESSAGE_ID_ATTRIBUTE]?.StringValue).toBe(entry(BUS).messageId);
  });

  it("SQS and SNS: refuses more attributes than they take with the message id", () => {
    const attributes = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, "v"]));
    const e = entry({ kind: "sqs", queueUrl: "https://sqs/1/q" }, "x", { attributes });
    expect(() => sqsSendMessageInput(e)).toThrow(OutboxEntryInvalidError);
    const nine = Object.fromEntries(Object.entries(attributes).slice(0, 9));
    expect(Object.keys(sqsSendMessageInput({ ...e, attributes: nine }).MessageAttributes!)).toHaveLength(10);
  });
});

describe("awsOutboxSender's errors", () => {
  it("a PutEvents answer with a failed entry is an EventBridgeEntryFailedError with its code and message", async () => {
    // A hand-made client: no local EventBridge exists, and a partial failure is an answer only AWS gives.
    const eventBridge = {
      send: async () => ({
        FailedEntryCount: 1,
        Entries: [{ ErrorCode: "ThrottlingException", ErrorMessage: "Rate exceeded" }],
      }),
    };
    const e = entry(BUS);
    const error = await awsOutboxSender({ eventBridge })
      .send(e)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(EventBridgeEntryFailedError);
    expect(error).toBeInstanceOf(OutboxSendError);
    expect(error).toMatchObject({
      errorCode: "ThrottlingException",
      errorMessage: "Rate exceeded",
      messageId: e.messageId,
    });
  });

  it("a PutEvents answer without failures is a send", async () => {
    const sent: unknown[] = [];
    const eventBridge = {
      send: async (command: object) => {
        sent.push((command as { input: unknown }).input);
        return { FailedEntryCount: 0, Entries: [{ EventId: "e-1" }] };
      },
    };
    await awsOutboxSender({ eventBridge }).send(entry(BUS));
    expect(sent).toEqual([eventBridgePutEventsInput(entry(BUS))]);
  });

  it("a client's error is an OutboxSendError with it as cause", async () => {
    const cause = new Error("socket hang up");
    const sqs = { send: async () => Promise.reject(cause) };
    const error = await awsOutboxSender({ sqs })
      .send(entry({ kind: "sqs", queueUrl: "https://sqs/1/q" }))
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OutboxSendError);
    expect((error as Error).cause).toBe(cause);
  });

  it("refuses options that are not clients", () => {
    expect(() => awsOutboxSender({ sns: {} as never })).toThrow(OptionsError);
    expect(() => awsOutboxSender({ queue: 1 } as never)).toThrow(OptionsError);
  });
});
