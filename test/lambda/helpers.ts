import { randomUUID } from "node:crypto";
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { inject, vi } from "vitest";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { DynamoDBFencedSink } from "../../src/sinks/dynamodb.js";
import { encodeS3NotificationKey } from "../../src/sources/key-encoding.js";
import { createStateTable, createTableIfMissing } from "../../src/stores/dynamodb/schema.js";
import { DynamoDBStore } from "../../src/stores/dynamodb/store.js";

/** A Lambda context whose clock runs: getRemainingTimeInMillis() counts down from `timeoutMs`. */
export function fakeContext(options: { timeoutMs?: number; functionName?: string } = {}): Context {
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 30_000;
  const fail = () => {
    throw new Error("deprecated callback API");
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: options.functionName ?? "eonce-test",
    functionVersion: "$LATEST",
    invokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:eonce-test",
    memoryLimitInMB: "256",
    awsRequestId: randomUUID(),
    logGroupName: "/aws/lambda/eonce-test",
    logStreamName: "2026/01/01/[$LATEST]test",
    getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
    done: fail,
    fail,
    succeed: fail,
  };
}

// ---------------------------------------------------------------- events, in the shapes Lambda delivers

let sequencer = 0x10000000000n;
/** A fresh, increasing S3 sequencer (hex, 16 digits as S3 sends them). */
export function nextSequencer(): string {
  sequencer += 1n;
  return sequencer.toString(16).toUpperCase().padStart(16, "0");
}

export interface S3RecordInput {
  bucket?: string;
  key: string;
  sequencer?: string | null;
  eventName?: string;
  versionId?: string;
  requestId?: string;
}

export function s3Record(r: S3RecordInput): Record<string, unknown> {
  const object: Record<string, unknown> = { key: encodeS3NotificationKey(r.key), size: 3, eTag: "abc" };
  if (r.sequencer !== null) object.sequencer = r.sequencer ?? nextSequencer();
  if (r.versionId) object.versionId = r.versionId;
  return {
    eventVersion: "2.1",
    eventSource: "aws:s3",
    awsRegion: "us-east-1",
    eventTime: "2026-01-01T00:00:00.000Z",
    eventName: r.eventName ?? "ObjectCreated:Put",
    userIdentity: { principalId: "AWS:TEST" },
    requestParameters: { sourceIPAddress: "127.0.0.1" },
    responseElements: {
      "x-amz-request-id": r.requestId ?? `REQ${randomUUID().slice(0, 8)}`,
      "x-amz-id-2": "id2",
    },
    s3: {
      s3SchemaVersion: "1.0",
      configurationId: "test",
      bucket: {
        name: r.bucket ?? "bucket",
        ownerIdentity: { principalId: "TEST" },
        arn: `arn:aws:s3:::${r.bucket ?? "bucket"}`,
      },
      object,
    },
  };
}

export function s3Event(...records: S3RecordInput[]): { Records: Record<string, unknown>[] } {
  return { Records: records.map(s3Record) };
}

export function s3TestEvent(bucket = "bucket") {
  return {
    Service: "Amazon S3",
    Event: "s3:TestEvent",
    Time: "2026-01-01T00:00:00.000Z",
    Bucket: bucket,
    RequestId: "TESTREQ",
    HostId: "host",
  };
}

export function eventBridgeS3(key: string, seq = nextSequencer(), bucket = "bucket") {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Object Created",
    source: "aws.s3",
    account: "000000000000",
    time: "2026-01-01T00:00:00Z",
    region: "us-east-1",
    resources: [`arn:aws:s3:::${bucket}`],
    detail: {
      version: "0",
      bucket: { name: bucket },
      object: { key, size: 3, etag: "abc", sequencer: seq },
      "request-id": `REQ${randomUUID().slice(0, 8)}`,
      requester: "000000000000",
    },
  };
}

export function snsEnvelope(message: unknown) {
  return {
    Type: "Notification",
    MessageId: randomUUID(),
    TopicArn: "arn:aws:sns:us-east-1:000000000000:topic",
    Message: typeof message === "string" ? message : JSON.stringify(message),
    Timestamp: "2026-01-01T00:00:00.000Z",
  };
}

export interface SqsRecordInput {
  body: unknown;
  messageId?: string;
  receiveCount?: number;
  groupId?: string;
  arn?: string;
  attributes?: Record<string, string>;
}

/** An SQS record as the Lambda event source mapping delivers it. */
export function sqsRecord(r: SqsRecordInput): SQSRecord {
  const attributes: Record<string, string> = {
    ApproximateReceiveCount: String(r.receiveCount ?? 1),
    SentTimestamp: String(Date.now()),
    SenderId: "AIDATEST",
    ApproximateFirstReceiveTimestamp: String(Date.now()),
  };
  if (r.groupId !== undefined) {
    attributes.MessageGroupId = r.groupId;
    attributes.SequenceNumber = String(Date.now());
    attributes.MessageDeduplicationId = randomUUID();
  }
  return {
    messageId: r.messageId ?? randomUUID(),
    receiptHandle: `rh-${randomUUID()}`,
    body: typeof r.body === "string" ? r.body : JSON.stringify(r.body),
    attributes: { ...attributes, ...r.attributes } as unknown as SQSRecord["attributes"],
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: r.arn ?? "arn:aws:sqs:us-east-1:000000000000:queue",
    awsRegion: "us-east-1",
  };
}

export function sqsEvent(...records: SqsRecordInput[]): SQSEvent {
  return { Records: records.map(sqsRecord) };
}

/** A received message → the record Lambda's SQS poller would hand the function. */
export function lambdaRecordOf(m: Message, eventSourceARN: string): SQSRecord {
  const messageAttributes: SQSRecord["messageAttributes"] = {};
  for (const [name, v] of Object.entries(m.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      dataType: v.DataType ?? "String",
      ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
      stringListValues: [],
      binaryListValues: [],
    };
  }
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? "",
    attributes: (m.Attributes ?? {}) as SQSRecord["attributes"],
    messageAttributes,
    md5OfBody: m.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN,
    awsRegion: "us-east-1",
  };
}

export type SqsLambda = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | unknown>;

export interface PollResult {
  received: Message[];
  failed: string[];
}

/**
 * One turn of a Lambda SQS event source poller against a real queue: receive a batch, invoke, delete
 * what succeeded (all of it unless reported in batchItemFailures; nothing if the function threw).
 */
export async function pollOnce(
  sqs: SQSClient,
  queueUrl: string,
  arn: string,
  handler: SqsLambda,
  options: { timeoutMs?: number; max?: number } = {},
): Promise<PollResult> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: options.max ?? 10,
      MessageSystemAttributeNames: ["All"],
      MessageAttributeNames: ["All"],
    }),
  );
  if (Messages.length === 0) return { received: [], failed: [] };
  const event: SQSEvent = { Records: Messages.map((m) => lambdaRecordOf(m, arn)) };
  let failed: string[];
  try {
    const response = (await handler(
      event,
      fakeContext({ timeoutMs: options.timeoutMs }),
    )) as SQSBatchResponse;
    failed = (response?.batchItemFailures ?? []).map((f) => f.itemIdentifier);
  } catch {
    failed = Messages.map((m) => m.MessageId!);
  }
  const done = Messages.filter((m) => !failed.includes(m.MessageId!));
  if (done.length > 0) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return { received: Messages, failed };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- captured stdout/stderr (logs and EMF)

export interface Captured {
  /** Every JSON line written, logs and EMF. */
  lines(): Record<string, unknown>[];
  /** Log lines (Powertools Logger): everything that is not EMF. */
  logs(): Record<string, unknown>[];
  /** Metric sums across all EMF lines: name → total (value arrays are summed). */
  metrics(): Record<string, number>;
  /** Raw values of one metric across EMF lines. */
  values(name: string): number[];
  emf(): Record<string, unknown>[];
  clear(): void;
  restore(): void;
}

/** Captures what Powertools prints (its own Console writes to process.stdout/stderr directly). */
export function captureOutput(): Captured {
  let text = "";
  const grab = (chunk: unknown) => {
    text += typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    return true;
  };
  const out = vi.spyOn(process.stdout, "write").mockImplementation(grab as typeof process.stdout.write);
  const err = vi.spyOn(process.stderr, "write").mockImplementation(grab as typeof process.stderr.write);
  const lines = () =>
    text
      .split("\n")
      .filter((l) => l.trim().startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const emf = () => lines().filter((l) => "_aws" in l);
  const values = (name: string) =>
    emf().flatMap((l) => {
      const v = l[name];
      return v === undefined ? [] : Array.isArray(v) ? (v as number[]) : [v as number];
    });
  return {
    lines,
    logs: () => lines().filter((l) => !("_aws" in l)),
    emf,
    values,
    metrics: () => {
      const sums: Record<string, number> = {};
      for (const l of emf()) {
        const aws = l._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] };
        for (const { Name } of aws.CloudWatchMetrics[0]?.Metrics ?? []) {
          const v = l[Name];
          const add = Array.isArray(v) ? (v as number[]).reduce((a, b) => a + b, 0) : Number(v);
          sums[Name] = (sums[Name] ?? 0) + add;
        }
      }
      return sums;
    },
    clear: () => {
      text = "";
    },
    restore: () => {
      out.mockRestore();
      err.mockRestore();
    },
  };
}

export function messages(captured: Captured): string[] {
  return captured.logs().map((l) => String(l.message));
}

// ---------------------------------------------------------------- DynamoDB Local: state table + fenced sink

export interface Tables {
  store: DynamoDBStore;
  sink: DynamoDBFencedSink;
  close(): void;
}

export async function dynamoTables(): Promise<Tables> {
  const client = dynamoDBClient(inject("dynamodbEndpoint"));
  const suffix = randomUUID().slice(0, 8);
  await createStateTable(client, { tableName: `lambda-state-${suffix}` });
  await createTableIfMissing(client, `lambda-sink-${suffix}`, "pk");
  return {
    store: new DynamoDBStore({ client, tableName: `lambda-state-${suffix}` }),
    sink: new DynamoDBFencedSink({ client, tableName: `lambda-sink-${suffix}` }),
    close: () => client.destroy(),
  };
}
