import { existsSync } from "node:fs";
import { Readable } from "node:stream";
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type LocalS3Server,
  type S3rverEventRecord,
  startS3Server,
} from "../../src/local/emulators/s3-server.js";
import { sleep, useLocalSqs } from "../kit/index.js";

/** For SDK clients whose expected warnings would clutter the output. */
const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

describe("local S3 server (s3rver)", () => {
  const bucket = "local-bucket";
  let server: LocalS3Server;
  let s3: S3Client;
  const listenerErrors: unknown[] = [];

  beforeAll(async () => {
    server = await startS3Server({
      buckets: [bucket],
      onListenerError: (error) => listenerErrors.push(error),
    });
    s3 = server.client();
  });

  afterAll(async () => {
    s3?.destroy();
    await server?.stop();
  });

  /** Collects the records of the events emitted while `action` runs. */
  async function eventsDuring(action: () => Promise<unknown>): Promise<S3rverEventRecord[]> {
    const records: S3rverEventRecord[] = [];
    const unsubscribe = server.onObjectEvent((record) => records.push(record));
    try {
      await action();
    } finally {
      unsubscribe();
    }
    return records;
  }

  it("listens on 127.0.0.1 only", () => {
    expect(server.address).toBe("127.0.0.1");
    expect(server.endpoint).toBe(`http://127.0.0.1:${server.port}`);
    expect(existsSync(server.directory)).toBe(true);
  });

  it("round-trips a Buffer body with metadata through Put, Get, Head, List and Copy", async () => {
    const key = "in/a b+c:d.bin";
    const body = Buffer.from([0, 1, 2, 250, 251, 252]);
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: body,
        ContentType: "application/octet-stream",
        Metadata: { source: "test", "trace-id": "abc-123" },
      }),
    );
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(Buffer.from(await get.Body!.transformToByteArray())).toEqual(body);
    expect(get.Metadata).toEqual({ source: "test", "trace-id": "abc-123" });
    expect(get.ContentType).toBe("application/octet-stream");
    expect(get.ETag).toBe(put.ETag);

    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.ContentLength).toBe(body.length);
    expect(head.Metadata).toEqual({ source: "test", "trace-id": "abc-123" });

    const list = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "in/" }));
    expect(list.Contents?.map((o) => o.Key)).toContain(key);

    // Encoded the AWS way; s3rver alone would look for the literal "%2B" and "%3A".
    const copySource = `${bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: "copied.bin", CopySource: copySource }));
    const copy = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "copied.bin" }));
    expect(copy.Metadata).toEqual({ source: "test", "trace-id": "abc-123" });
    expect(copy.ETag).toBe(put.ETag);
  });

  it("stores stream bodies byte for byte with its client and refuses aws-chunked uploads", async () => {
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: "stream.txt",
        Body: Readable.from([Buffer.from("hello "), Buffer.from("stream")]),
        ContentLength: 12,
      }),
    );
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "stream.txt" }));
    expect(await get.Body!.transformToString()).toBe("hello stream");

    // SDK defaults: a stream body goes out aws-chunked with a checksum trailer.
    const defaults = new S3Client({
      endpoint: server.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
      logger: quietLogger,
      maxAttempts: 1,
    });
    try {
      const upload = defaults.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: "chunked.txt",
          Body: Readable.from([Buffer.from("chunked")]),
          ContentLength: 7,
        }),
      );
      await expect(upload).rejects.toMatchObject({ $metadata: { httpStatusCode: 501 } });
    } finally {
      defaults.destroy();
    }
    await expect(
      s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "chunked.txt" })),
    ).rejects.toMatchObject({
      $metadata: { httpStatusCode: 404 },
    });
  });

  it("honours IfNoneMatch and IfMatch on PutObject (the conditional-writes layer; see s3-conditional.test.ts)", async () => {
    const key = "conditional.txt";
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "first" }));
    await expect(
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "second", IfNoneMatch: "*" })),
    ).rejects.toMatchObject({ name: "PreconditionFailed" });
    await expect(
      s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "third", IfMatch: '"0000"' })),
    ).rejects.toMatchObject({ name: "PreconditionFailed" });
    const get = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(await get.Body!.transformToString()).toBe("first");
  });

  it("emits put, copy and delete object events with bucket, key and eventName", async () => {
    const key = "events/file one.txt";
    const created = await eventsDuring(async () => {
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "payload" }));
      expect(put.ETag).toBe('"321c3cf486ed509164edec1e1981fec8"');
      await s3.send(
        new CopyObjectCommand({
          Bucket: bucket,
          Key: "events/copy.txt",
          CopySource: `${bucket}/${encodeURI(key)}`,
        }),
      );
    });
    expect(created).toHaveLength(2);
    expect(created[0]).toMatchObject({
      eventSource: "aws:s3",
      eventName: "ObjectCreated:Put",
      s3: {
        bucket: { name: bucket },
        object: { key, size: 7, eTag: "321c3cf486ed509164edec1e1981fec8" },
      },
    });
    expect(created[0]!.s3.object.sequencer).toMatch(/^[0-9A-F]+$/);
    expect(created[1]).toMatchObject({
      eventName: "ObjectCreated:Copy",
      s3: { bucket: { name: bucket }, object: { key: "events/copy.txt", size: 7 } },
    });

    const removed = await eventsDuring(async () => {
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      // Deleting a missing key answers 204 and emits nothing.
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "events/never-existed" }));
    });
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({
      eventName: "ObjectRemoved:Delete",
      s3: { bucket: { name: bucket }, object: { key } },
    });
  });

  it("stops delivering after unsubscribe and survives a throwing listener", async () => {
    const seen: string[] = [];
    const unsubscribe = server.onObjectEvent((record) => seen.push(record.s3.object.key));
    const unsubscribeThrower = server.onObjectEvent(() => {
      throw new Error("listener bug");
    });
    try {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "sub/1", Body: "1" }));
    } finally {
      unsubscribe();
      unsubscribeThrower();
    }
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "sub/2", Body: "2" }));
    expect(seen).toEqual(["sub/1"]);
    expect(listenerErrors).toHaveLength(1);
    expect(String(listenerErrors[0])).toContain("listener bug");
  });

  it("removes its storage directory on stop", async () => {
    const other = await startS3Server();
    const directory = other.directory;
    expect(existsSync(directory)).toBe(true);
    await other.stop();
    expect(existsSync(directory)).toBe(false);
  });
});

describe("local SQS server (fauxqs)", () => {
  const local = useLocalSqs();

  async function createQueue(name: string, attributes: Record<string, string> = {}): Promise<string> {
    const { QueueUrl } = await local.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    expect(QueueUrl).toBe(local.server.queueUrl(name));
    return QueueUrl!;
  }

  async function receive(queueUrl: string, max = 10): Promise<Message[]> {
    const { Messages } = await local.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: max,
        MessageSystemAttributeNames: ["All"],
      }),
    );
    return Messages ?? [];
  }

  async function counts(queueUrl: string): Promise<{ visible: string; inFlight: string }> {
    const { Attributes } = await local.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    return {
      visible: Attributes?.ApproximateNumberOfMessages ?? "?",
      inFlight: Attributes?.ApproximateNumberOfMessagesNotVisible ?? "?",
    };
  }

  it("listens on 127.0.0.1 only and hands out queue URLs on 127.0.0.1", async () => {
    expect(local.server.address).toBe("127.0.0.1");
    expect(local.server.endpoint).toBe(`http://127.0.0.1:${local.server.port}`);
    const url = await createQueue("url-check");
    expect(new URL(url).host).toBe(`127.0.0.1:${local.server.port}`);

    // A client configured like a handler's on AWS (no endpoint) follows the QueueUrl's host.
    const plain = new SQSClient({
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      logger: quietLogger,
      maxAttempts: 1,
    });
    try {
      await plain.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "via queue url" }));
    } finally {
      plain.destroy();
    }
    const [message] = await receive(url);
    expect(message?.Body).toBe("via queue url");
  });

  it("redelivers after the visibility timeout with ApproximateReceiveCount 2", async () => {
    const url = await createQueue("visibility", { VisibilityTimeout: "1" });
    const sent = await local.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "work" }));

    const [first] = await receive(url);
    expect(first?.MessageId).toBe(sent.MessageId);
    expect(first?.Attributes?.ApproximateReceiveCount).toBe("1");
    expect(await receive(url)).toEqual([]);

    await sleep(1_100);
    const [second] = await receive(url);
    expect(second?.MessageId).toBe(sent.MessageId);
    expect(second?.Attributes?.ApproximateReceiveCount).toBe("2");
    expect(second?.ReceiptHandle).not.toBe(first?.ReceiptHandle);

    await local.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: second!.ReceiptHandle! }));
    expect(await counts(url)).toEqual({ visible: "0", inFlight: "0" });
  });

  it("keeps a message hidden past the original timeout after ChangeMessageVisibility", async () => {
    const url = await createQueue("extend", { VisibilityTimeout: "1" });
    await local.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "slow work" }));
    const [message] = await receive(url);
    expect(message).toBeDefined();

    await local.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: message!.ReceiptHandle!,
        VisibilityTimeout: 5,
      }),
    );
    await sleep(1_300);
    expect(await receive(url)).toEqual([]);
    expect(await counts(url)).toEqual({ visible: "0", inFlight: "1" });

    // Visibility 0 releases it at once (what a poller does on a failed record).
    await local.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: url,
        ReceiptHandle: message!.ReceiptHandle!,
        VisibilityTimeout: 0,
      }),
    );
    const [again] = await receive(url);
    expect(again?.MessageId).toBe(message?.MessageId);
    expect(again?.Attributes?.ApproximateReceiveCount).toBe("2");
  });

  it("moves a message to the DLQ after maxReceiveCount receives", async () => {
    const dlqUrl = await createQueue("work-dlq");
    const url = await createQueue("work", {
      VisibilityTimeout: "1",
      RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: local.server.queueArn("work-dlq"),
        maxReceiveCount: 2,
      }),
    });
    const sent = await local.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "poison" }));

    for (const expected of ["1", "2"]) {
      const [message] = await receive(url);
      expect(message?.Attributes?.ApproximateReceiveCount).toBe(expected);
      await sleep(1_100);
    }
    // The third receive moves it instead of returning it.
    expect(await receive(url)).toEqual([]);
    expect(await counts(url)).toEqual({ visible: "0", inFlight: "0" });

    const [dead] = await receive(dlqUrl);
    expect(dead?.MessageId).toBe(sent.MessageId);
    expect(dead?.Body).toBe("poison");
    // fauxqs counted the receive that moved it (see src/local/emulators/sqs-server.ts).
    expect(dead?.Attributes?.ApproximateReceiveCount).toBe("4");
  });

  it("deletes received messages in a batch", async () => {
    const url = await createQueue("batch");
    for (const body of ["a", "b", "c"])
      await local.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    const messages = await receive(url);
    expect(messages.map((m) => m.Body).sort()).toEqual(["a", "b", "c"]);

    const result = await local.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.map((m, i) => ({ Id: `m${i}`, ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
    expect(result.Successful).toHaveLength(3);
    expect(result.Failed ?? []).toEqual([]);
    expect(await counts(url)).toEqual({ visible: "0", inFlight: "0" });
  });

  it("keeps FIFO group order, locks a group while in flight and drops duplicate dedup ids", async () => {
    const url = await createQueue("orders.fifo", { FifoQueue: "true", VisibilityTimeout: "2" });
    const send = (group: string, body: string, dedupId = body) =>
      local.sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: dedupId,
        }),
      );
    const a1 = await send("g1", "a1");
    await send("g2", "b1");
    await send("g1", "a2");
    const duplicate = await send("g1", "a1 again", "a1");
    await send("g2", "b2");
    await send("g1", "a3");
    expect(duplicate.MessageId).toBe(a1.MessageId);

    const byGroup = new Map<string, string[]>();
    let firstRound = true;
    for (let round = 0; round < 10; round++) {
      const messages = await receive(url);
      if (messages.length === 0) break;
      if (firstRound) {
        // One message per group and nothing more from either group until it is deleted.
        expect(messages.map((m) => m.Body).sort()).toEqual(["a1", "b1"]);
        expect(await receive(url)).toEqual([]);
        firstRound = false;
      }
      for (const message of messages) {
        const group = message.Attributes?.MessageGroupId ?? "?";
        byGroup.set(group, [...(byGroup.get(group) ?? []), message.Body ?? "?"]);
        await local.sqs.send(
          new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: message.ReceiptHandle! }),
        );
      }
    }
    expect(byGroup.get("g1")).toEqual(["a1", "a2", "a3"]);
    expect(byGroup.get("g2")).toEqual(["b1", "b2"]);
    expect(await counts(url)).toEqual({ visible: "0", inFlight: "0" });
  });
});
