import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import { fifoId, fifoMessageIds, sendFifoMessage } from "../../src/lambda/fifo-producer.js";
import { type LocalSqsServer, startSqsServer } from "../../src/local/emulators/sqs-server.js";

const VALID = /^[!-~]{1,128}$/;

describe("fifoMessageIds", () => {
  it("uses a short printable subject as the group id as is", () => {
    const ids = fifoMessageIds({ subject: "order-42", identity: "v7" });
    expect(ids).toEqual({ MessageGroupId: "order-42", MessageDeduplicationId: "8:order-42:v7" });
  });

  it("hashes values that are too long or not printable ASCII, deterministically and within 128 characters", () => {
    const long = { subject: `bucket/${"k".repeat(300)}`, identity: "0000000000000001:created" };
    const unicode = { subject: "bucket/photos/été 2026.jpg", identity: "p:1" };
    for (const keys of [long, unicode]) {
      const ids = fifoMessageIds(keys);
      expect(ids.MessageGroupId).toMatch(VALID);
      expect(ids.MessageDeduplicationId).toMatch(VALID);
      expect(ids.MessageGroupId.startsWith("h:")).toBe(true);
      expect(fifoMessageIds({ ...keys })).toEqual(ids);
    }
    expect(fifoMessageIds(long).MessageGroupId).not.toBe(fifoMessageIds(unicode).MessageGroupId);
    // A raw value that looks like a hash is hashed too, so it can never equal another value's hash.
    expect(fifoId("h:abc")).not.toBe("h:abc");
  });

  it("keeps subject and identity apart in the dedup id", () => {
    const a = fifoMessageIds({ subject: "a:b", identity: "c" });
    const b = fifoMessageIds({ subject: "a", identity: "b:c" });
    expect(a.MessageDeduplicationId).not.toBe(b.MessageDeduplicationId);
  });

  it("rejects empty keys", () => {
    expect(() => fifoMessageIds({ subject: "", identity: "x" })).toThrow(OptionsError);
    expect(() => fifoMessageIds({ subject: "x", identity: "" })).toThrow(OptionsError);
  });
});

describe("sendFifoMessage on fauxqs", () => {
  let server: LocalSqsServer;
  let sqs: SQSClient;

  beforeAll(async () => {
    server = await startSqsServer();
    sqs = server.client();
  });
  afterAll(async () => {
    sqs?.destroy();
    await server?.stop();
  });

  it("drops a resend of the same event and keeps one subject's events in order", async () => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: "orders.fifo",
        Attributes: { FifoQueue: "true", VisibilityTimeout: "30" },
      }),
    );
    const queueUrl = QueueUrl!;
    const first = await sendFifoMessage(sqs, {
      queueUrl,
      subject: "order-1",
      identity: "v1",
      body: { version: 1 },
    });
    const resend = await sendFifoMessage(sqs, {
      queueUrl,
      subject: "order-1",
      identity: "v1",
      body: { version: 1 },
    });
    expect(resend.MessageId).toBe(first.MessageId);
    await sendFifoMessage(sqs, { queueUrl, subject: "order-1", identity: "v2", body: { version: 2 } });
    await sendFifoMessage(sqs, { queueUrl, subject: "bucket/été.jpg", identity: "p:1", body: "raw text" });

    const bodies: string[] = [];
    const groups = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      for (const m of Messages) {
        bodies.push(m.Body!);
        groups.add(m.Attributes!.MessageGroupId!);
        // Delete so the group unlocks and its next message can be received.
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
      }
    }
    expect(bodies.filter((b) => b.startsWith("{"))).toEqual(['{"version":1}', '{"version":2}']);
    expect(bodies).toContain("raw text");
    expect(bodies).toHaveLength(3);
    expect(groups).toEqual(new Set(["order-1", fifoId("bucket/été.jpg")]));
  });

  it("refuses a standard queue URL and unknown keys", async () => {
    await expect(
      sendFifoMessage(sqs, { queueUrl: server.queueUrl("plain"), subject: "s", identity: "i", body: "x" }),
    ).rejects.toThrow(/not a FIFO queue URL/);
    await expect(
      sendFifoMessage(sqs, {
        queueUrl: server.queueUrl("q.fifo"),
        subject: "s",
        identity: "i",
        body: "x",
        groupId: "g",
      } as never),
    ).rejects.toThrow(/unknown option "groupId"/);
  });
});
