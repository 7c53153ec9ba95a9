import { CreateTopicCommand, SNSClient, SubscribeCommand } from "@aws-sdk/client-sns";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../../src/local/aws-local.js";
import { awsOutboxSender } from "../../src/outbox/aws-sender.js";
import { OutboxSendError } from "../../src/outbox/errors.js";
import { OUTBOX_MESSAGE_ID_ATTRIBUTE, outboxMessageId, outboxOrder } from "../../src/outbox/message-id.js";
import type { Destination, OutboxEntry } from "../../src/outbox/types.js";
import { useLocalSqs } from "../kit/index.js";

/** An entry as `ctx.publish` makes it. */
function entry(destination: Destination, name: string, extra: Partial<OutboxEntry> = {}): OutboxEntry {
  return {
    messageId: outboxMessageId("order-1", "v1", name),
    subject: "order-1",
    order: outboxOrder(1, 0),
    destination,
    body: JSON.stringify({ name }),
    groupId: "order-1",
    createdAtMs: 0,
    ...extra,
  };
}

const attributesOf = (m: Message) =>
  Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]));

describe("awsOutboxSender on fauxqs", () => {
  const local = useLocalSqs();
  const sns = () =>
    new SNSClient({ endpoint: local.server.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });

  async function queue(name: string, fifo = false): Promise<string> {
    const attributes = fifo ? { FifoQueue: "true" } : {};
    const { QueueUrl } = await local.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    return QueueUrl!;
  }

  async function receive(queueUrl: string): Promise<Message[]> {
    const { Messages = [] } = await local.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ["All"],
        MessageSystemAttributeNames: ["All"],
      }),
    );
    return Messages;
  }

  /**
   * Every message of the queue, each deleted once received: a FIFO queue holds a group's next message back while
   * one is in flight, so a duplicate would only show after its first copy is deleted.
   */
  async function drain(queueUrl: string): Promise<Message[]> {
    const all: Message[] = [];
    for (;;) {
      const batch = await receive(queueUrl);
      if (batch.length === 0) return all;
      for (const m of batch) {
        await local.sqs.send(
          new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }),
        );
      }
      all.push(...batch);
    }
  }

  it("sends to a standard queue with the message id and the entry's attributes", async () => {
    const queueUrl = await queue("outbox-standard");
    const e = entry({ kind: "sqs", queueUrl }, "created", { attributes: { type: "order.created" } });
    await awsOutboxSender({ sqs: local.sqs }).send(e);
    const [m, ...more] = await receive(queueUrl);
    expect(more).toEqual([]);
    expect(m?.Body).toBe(e.body);
    expect(attributesOf(m!)).toEqual({ [OUTBOX_MESSAGE_ID_ATTRIBUTE]: e.messageId, type: "order.created" });
  });

  it("sends to a FIFO queue in the entry's group, and SQS drops a resend of the same entry", async () => {
    const queueUrl = await queue("outbox.fifo", true);
    const sender = awsOutboxSender({ sqs: local.sqs });
    const e = entry({ kind: "sqs", queueUrl }, "created", { groupId: "group-7" });
    await sender.send(e);
    await sender.send(e); // a relay that crashed before marking the entry sent
    const other = entry({ kind: "sqs", queueUrl }, "shipped", { groupId: "group-8" });
    await sender.send(other);
    const received = await drain(queueUrl);
    expect(received.map((m) => m.Body).sort()).toEqual([e.body, other.body].sort());
    const first = received.find((m) => m.Body === e.body)!;
    expect(first.Attributes?.MessageGroupId).toBe("group-7");
    expect(first.Attributes?.MessageDeduplicationId).toBe(e.messageId);
    expect(attributesOf(first)).toEqual({ [OUTBOX_MESSAGE_ID_ATTRIBUTE]: e.messageId });
  });

  it("publishes to SNS; subscribed queues get the message id, raw as an attribute and in the envelope", async () => {
    const client = sns();
    const { TopicArn } = await client.send(new CreateTopicCommand({ Name: "outbox-topic" }));
    const rawQueue = await queue("outbox-sns-raw");
    const envelopeQueue = await queue("outbox-sns-envelope");
    for (const [name, raw] of [
      ["outbox-sns-raw", "true"],
      ["outbox-sns-envelope", "false"],
    ] as const) {
      await client.send(
        new SubscribeCommand({
          TopicArn,
          Protocol: "sqs",
          Endpoint: local.server.queueArn(name),
          Attributes: { RawMessageDelivery: raw },
        }),
      );
    }
    const e = entry({ kind: "sns", topicArn: TopicArn! }, "created", {
      attributes: { type: "order.created" },
    });
    await awsOutboxSender({ sns: client }).send(e);

    const [rawMessage] = await receive(rawQueue);
    expect(rawMessage?.Body).toBe(e.body);
    expect(attributesOf(rawMessage!)).toEqual({
      [OUTBOX_MESSAGE_ID_ATTRIBUTE]: e.messageId,
      type: "order.created",
    });

    const [enveloped] = await receive(envelopeQueue);
    const envelope = JSON.parse(enveloped!.Body!) as {
      Message: string;
      MessageAttributes: Record<string, { Type: string; Value: string }>;
    };
    expect(envelope.Message).toBe(e.body);
    expect(envelope.MessageAttributes[OUTBOX_MESSAGE_ID_ATTRIBUTE]).toEqual({
      Type: "String",
      Value: e.messageId,
    });
    expect(envelope.MessageAttributes.type?.Value).toBe("order.created");
    client.destroy();
  });

  it("publishes to a FIFO topic with the entry's group and its message id as deduplication id", async () => {
    const client = sns();
    const { TopicArn } = await client.send(
      new CreateTopicCommand({ Name: "outbox-topic.fifo", Attributes: { FifoTopic: "true" } }),
    );
    const queueUrl = await queue("outbox-sns-fifo.fifo", true);
    await client.send(
      new SubscribeCommand({
        TopicArn,
        Protocol: "sqs",
        Endpoint: local.server.queueArn("outbox-sns-fifo.fifo"),
        Attributes: { RawMessageDelivery: "true" },
      }),
    );
    const sender = awsOutboxSender({ sns: client });
    const e = entry({ kind: "sns", topicArn: TopicArn! }, "created", { groupId: "group-7" });
    await sender.send(e);
    await sender.send(e);
    const received = await drain(queueUrl);
    expect(received.map((m) => m.Body)).toEqual([e.body]);
    expect(received[0]?.Attributes?.MessageGroupId).toBe("group-7");
    expect(attributesOf(received[0]!)).toEqual({ [OUTBOX_MESSAGE_ID_ATTRIBUTE]: e.messageId });
    client.destroy();
  });

  it("throws an OutboxSendError with the client's error as cause when the queue does not exist", async () => {
    const e = entry({ kind: "sqs", queueUrl: local.server.queueUrl("no-such-queue") }, "lost");
    const error = await awsOutboxSender({ sqs: local.sqs })
      .send(e)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OutboxSendError);
    expect((error as OutboxSendError).messageId).toBe(e.messageId);
    expect((error as OutboxSendError).cause).toBeInstanceOf(Error);
  });
});
