import {
  type ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import {
  type HeartbeatProblem,
  queueUrlFromArn,
  type SqsSender,
  VisibilityHeartbeat,
} from "../../src/lambda/visibility-heartbeat.js";
import { LOCAL_CREDENTIALS } from "../../src/local/aws-local.js";
import { sleep, useLocalSqs } from "../kit/index.js";

describe("queueUrlFromArn", () => {
  it.each([
    ["arn:aws:sqs:eu-west-1:123456789012:orders", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"],
    [
      "arn:aws:sqs:us-east-1:123456789012:orders.fifo",
      "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo",
    ],
    [
      "arn:aws-cn:sqs:cn-north-1:123456789012:q_1",
      "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q_1",
    ],
    [
      "arn:aws-us-gov:sqs:us-gov-west-1:123456789012:q-2",
      "https://sqs.us-gov-west-1.amazonaws.com/123456789012/q-2",
    ],
  ])("%s", (arn, url) => {
    expect(queueUrlFromArn(arn)).toBe(url);
  });

  it.each([
    "",
    "arn:aws:sns:us-east-1:123456789012:topic",
    "arn:aws:sqs:us-east-1:1234:short-account",
    "arn:aws:sqs:us-east-1:123456789012:",
    "arn:aws:sqs:us-east-1:123456789012:bad/name",
    "arn:aws-iso:sqs:us-iso-east-1:123456789012:q",
    // The partition comes from the record: an Object.prototype name must not find a domain.
    "arn:constructor:sqs:us-east-1:123456789012:q",
  ])("rejects %j", (arn) => {
    expect(() => queueUrlFromArn(arn)).toThrow(OptionsError);
  });
});

describe("VisibilityHeartbeat options", () => {
  const client: SqsSender = { send: async () => ({}) as never };
  it.each([
    [{ visibilityTimeoutSeconds: 10, intervalSeconds: 10 }, /must be below visibilityTimeoutSeconds/],
    [{ visibilityTimeoutSeconds: 10, intervalSeconds: 20 }, /must be below visibilityTimeoutSeconds/],
    [{ visibilityTimeoutSeconds: 43_201, intervalSeconds: 20 }, /must be an integer from 1 to 43200/],
    [{ visibilityTimeoutSeconds: 30, intervalSeconds: 0 }, /intervalSeconds must be a positive integer/],
    [
      { visibilityTimeoutSeconds: 1.5, intervalSeconds: 1 },
      /visibilityTimeoutSeconds must be an integer from 1 to 43200/,
    ],
    [{ visibilityTimeoutSeconds: 30, intervalSeconds: 10, intervalMs: 5 }, /unknown option "intervalMs"/],
    [
      { visibilityTimeoutSeconds: 30, intervalSeconds: 10, queueUrl: "http://x" },
      /queueUrl must be a function/,
    ],
  ])("rejects %j", (options, message) => {
    expect(() => new VisibilityHeartbeat(options as never, { client })).toThrow(message);
  });

  it("requires a client", () => {
    expect(
      () => new VisibilityHeartbeat({ visibilityTimeoutSeconds: 30, intervalSeconds: 10 }, {} as never),
    ).toThrow(/client/);
  });
});

describe("VisibilityHeartbeat on fauxqs", () => {
  const local = useLocalSqs();
  let n = 0;

  async function queueWithMessage(
    visibilityTimeoutSeconds: number,
  ): Promise<{ url: string; arn: string; message: Message }> {
    const name = `hb-${++n}`;
    const { QueueUrl } = await local.sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { VisibilityTimeout: String(visibilityTimeoutSeconds) },
      }),
    );
    await local.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "work" }));
    const { Messages } = await local.sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MessageSystemAttributeNames: ["All"], MaxNumberOfMessages: 1 }),
    );
    expect(Messages).toHaveLength(1);
    return { url: QueueUrl!, arn: local.server.queueArn(name), message: Messages![0]! };
  }

  const receive = async (url: string) =>
    (await local.sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MessageSystemAttributeNames: ["All"] })))
      .Messages ?? [];

  /** Counts what the heartbeat sends, passing every command to the real local.server. */
  function counting(): SqsSender & { sent: string[] } {
    const sent: string[] = [];
    return {
      sent,
      send: ((command: { constructor: { name: string } }, options?: unknown) => {
        sent.push(command.constructor.name);
        return local.sqs.send(command as never, options as never);
      }) as SQSClient["send"],
    };
  }

  // These wait on SQS's real clock (fauxqs keeps visibility timeouts in real time), each on its own queue: side by
  // side. test/lambda/visibility-heartbeat-timers.test.ts checks the heartbeat's timing on fake timers.
  it.concurrent("keeps a message invisible past the queue's timeout while running, and lets it go after stop", async () => {
    const { url, arn, message } = await queueWithMessage(1);
    const client = counting();
    const heartbeat = new VisibilityHeartbeat(
      {
        visibilityTimeoutSeconds: 2,
        intervalSeconds: 1,
        queueUrl: (a) => local.server.queueUrl(a.split(":").pop()!),
      },
      { client },
    );
    const run = heartbeat.start([
      { messageId: message.MessageId!, receiptHandle: message.ReceiptHandle!, eventSourceArn: arn },
    ]);
    try {
      await sleep(2_600); // the queue's own timeout (1 s) passed twice
      expect(await receive(url)).toEqual([]);
      expect(run.extended).toBeGreaterThanOrEqual(2);
    } finally {
      await run.stop();
    }
    const sentAtStop = client.sent.length;
    expect(client.sent.every((c) => c === "ChangeMessageVisibilityBatchCommand")).toBe(true);
    await sleep(2_100); // the last extension (2 s) runs out; no tick after stop
    expect(client.sent.length).toBe(sentAtStop);
    const [again] = await receive(url);
    expect(again?.MessageId).toBe(message.MessageId);
    expect(again?.Attributes?.ApproximateReceiveCount).toBe("2");
  });

  it.concurrent("stops extending a message once done() is called", async () => {
    const { url, arn, message } = await queueWithMessage(1);
    const heartbeat = new VisibilityHeartbeat(
      {
        visibilityTimeoutSeconds: 2,
        intervalSeconds: 1,
        queueUrl: (a) => local.server.queueUrl(a.split(":").pop()!),
      },
      { client: local.sqs },
    );
    const run = heartbeat.start([
      { messageId: message.MessageId!, receiptHandle: message.ReceiptHandle!, eventSourceArn: arn },
    ]);
    try {
      run.done(message.MessageId!);
      await sleep(1_300);
      expect(run.extended).toBe(0);
      expect((await receive(url)).map((m) => m.MessageId)).toEqual([message.MessageId]);
    } finally {
      await run.stop();
    }
  });

  it.concurrent("drops a message whose extension SQS refuses and reports it once", async () => {
    const { url, arn, message } = await queueWithMessage(30);
    await local.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle! }));
    const problems: HeartbeatProblem[] = [];
    const client = counting();
    const heartbeat = new VisibilityHeartbeat(
      {
        visibilityTimeoutSeconds: 5,
        intervalSeconds: 1,
        queueUrl: (a) => local.server.queueUrl(a.split(":").pop()!),
      },
      { client, onProblem: (p) => problems.push(p) },
    );
    const run = heartbeat.start([
      { messageId: message.MessageId!, receiptHandle: message.ReceiptHandle!, eventSourceArn: arn },
    ]);
    try {
      await sleep(2_500);
    } finally {
      await run.stop();
    }
    expect(problems).toEqual([
      expect.objectContaining({
        kind: "refused",
        code: "ReceiptHandleIsInvalid",
        message: expect.objectContaining({ messageId: message.MessageId }),
      }),
    ]);
    expect(client.sent).toEqual(["ChangeMessageVisibilityBatchCommand"]); // not retried after the refusal
  });

  it.concurrent("extends up to ten receipt handles per request, per queue", async () => {
    const name = `hb-batch-${++n}`;
    const { QueueUrl } = await local.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: "1" } }),
    );
    for (let i = 0; i < 12; i++)
      await local.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `m${i}` }));
    const messages: Message[] = [];
    while (messages.length < 12) {
      const { Messages = [] } = await local.sqs.send(
        new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
      );
      messages.push(...Messages);
    }
    const sizes: number[] = [];
    const client: SqsSender = {
      send: ((command: ChangeMessageVisibilityBatchCommand, options?: unknown) => {
        sizes.push(command.input.Entries?.length ?? 0);
        return local.sqs.send(command, options as never);
      }) as SQSClient["send"],
    };
    const heartbeat = new VisibilityHeartbeat(
      { visibilityTimeoutSeconds: 3, intervalSeconds: 1, queueUrl: () => QueueUrl! },
      { client },
    );
    const run = heartbeat.start(
      messages.map((m) => ({
        messageId: m.MessageId!,
        receiptHandle: m.ReceiptHandle!,
        eventSourceArn: local.server.queueArn(name),
      })),
    );
    try {
      await sleep(1_500);
      expect(await receive(QueueUrl!)).toEqual([]);
    } finally {
      await run.stop();
    }
    expect(sizes).toEqual([10, 2]);
    expect(run.extended).toBe(12);
  });

  // Sequential: these two set and restore process.env.
  it.each([
    ["AWS_ENDPOINT_URL_SQS", "env"],
    ["the client's endpoint", "client"],
  ] as const)("without a queueUrl option, addresses queues under %s", async (_what, how) => {
    const { url, arn, message } = await queueWithMessage(1);
    const saved = { sqs: process.env.AWS_ENDPOINT_URL_SQS, all: process.env.AWS_ENDPOINT_URL };
    delete process.env.AWS_ENDPOINT_URL;
    if (how === "env") process.env.AWS_ENDPOINT_URL_SQS = local.server.endpoint;
    else delete process.env.AWS_ENDPOINT_URL_SQS;
    const problems: HeartbeatProblem[] = [];
    // "env": a client with no endpoint of its own, as `new SQSClient({})` in a handler.
    const client =
      how === "env" ? new SQSClient({ region: "us-east-1", credentials: LOCAL_CREDENTIALS }) : local.sqs;
    const heartbeat = new VisibilityHeartbeat(
      { visibilityTimeoutSeconds: 2, intervalSeconds: 1 },
      { client, onProblem: (p) => problems.push(p) },
    );
    const run = heartbeat.start([
      { messageId: message.MessageId!, receiptHandle: message.ReceiptHandle!, eventSourceArn: arn },
    ]);
    try {
      await sleep(2_600);
      expect(problems).toEqual([]);
      expect(run.extended).toBeGreaterThanOrEqual(2);
      expect(await receive(url)).toEqual([]);
    } finally {
      await run.stop();
      if (how === "env") client.destroy();
      for (const [name, value] of [
        ["AWS_ENDPOINT_URL_SQS", saved.sqs],
        ["AWS_ENDPOINT_URL", saved.all],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
