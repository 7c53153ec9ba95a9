import { randomUUID } from "node:crypto";
import type { Message } from "@aws-sdk/client-sqs";
import type { EventBridgeEvent, S3EventRecord, SQSEvent, SQSRecord } from "aws-lambda";
import { positionFromNumber } from "../../src/core/position.js";
import { encodeS3NotificationKey } from "../../src/sources/key-encoding.js";

/**
 * Invocation payloads in the shapes Lambda delivers them. The defaults are the AWS documentation examples (bucket
 * `amzn-s3-demo-bucket`, sequencer `0055AED6DCD90281E5`, …), so a test that does not pass a field can assert on it.
 * No vitest import: the bench uses these too.
 */

export const EXAMPLE_BUCKET = "amzn-s3-demo-bucket";
export const EXAMPLE_SEQUENCER = "0055AED6DCD90281E5";

let sequencer = 0x10000000000n;
/** A fresh, increasing S3 sequencer (hex, 16 digits as S3 sends them). */
export function nextSequencer(): string {
  sequencer += 1n;
  return sequencer.toString(16).toUpperCase().padStart(16, "0");
}

// ---------------------------------------------------------------- S3 notifications

interface S3RecordFields {
  bucket?: string;
  /** `null`: the record has no sequencer at all (default: the documentation example's). */
  sequencer?: string | null;
  eventName?: string;
  size?: number;
  eTag?: string;
  versionId?: string;
  requestId?: string;
  eventTime?: string;
}

/** The object key: `key` as uploaded (the builder encodes it as S3 does), or `encodedKey` exactly as it appears in the record (already encoded, or deliberately broken). */
export type S3RecordInput = S3RecordFields &
  ({ key: string; encodedKey?: never } | { encodedKey: string; key?: never });

/** One S3 event notification record (`Records[i]` of an S3 notification). */
export function s3Record(input: S3RecordInput): S3EventRecord {
  const bucket = input.bucket ?? EXAMPLE_BUCKET;
  const object: S3EventRecord["s3"]["object"] = {
    key: input.encodedKey ?? encodeS3NotificationKey(input.key as string),
    size: input.size ?? 1024,
    eTag: input.eTag ?? "d41d8cd98f00b204e9800998ecf8427e",
    sequencer: input.sequencer ?? EXAMPLE_SEQUENCER,
  };
  if (input.sequencer === null) delete (object as Partial<typeof object>).sequencer;
  if (input.versionId !== undefined) object.versionId = input.versionId;
  return {
    eventVersion: "2.1",
    eventSource: "aws:s3",
    awsRegion: "us-west-2",
    eventTime: input.eventTime ?? "2024-05-01T12:00:00.000Z",
    eventName: input.eventName ?? "ObjectCreated:Put",
    userIdentity: { principalId: "AIDAJDPLRKLG7UEXAMPLE" },
    requestParameters: { sourceIPAddress: "127.0.0.1" },
    responseElements: {
      "x-amz-request-id": input.requestId ?? "C3D13FE58DE4C810",
      "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD",
    },
    s3: {
      s3SchemaVersion: "1.0",
      configurationId: "testConfigRule",
      bucket: {
        name: bucket,
        ownerIdentity: { principalId: "A3NL1KOZZKExample" },
        arn: `arn:aws:s3:::${bucket}`,
      },
      object,
    },
  };
}

/** An S3 notification: `{ Records }`. Takes built records (typed as `S3Event`) or anything a test broke on purpose. */
export function s3Notification<R extends unknown[] = S3EventRecord[]>(...records: R): { Records: R } {
  return { Records: records };
}

/** The `s3:TestEvent` S3 sends when a notification configuration is saved. */
export function s3TestEvent(bucket = EXAMPLE_BUCKET) {
  return {
    Service: "Amazon S3",
    Event: "s3:TestEvent",
    Time: "2024-05-01T12:00:00.000Z",
    Bucket: bucket,
    RequestId: "TESTREQ",
    HostId: "host",
  };
}

// ---------------------------------------------------------------- SQS

export interface SqsRecordOptions extends Partial<Omit<SQSRecord, "body">> {
  /** `attributes.ApproximateReceiveCount` (default 1). */
  receiveCount?: number;
  /** A FIFO message: sets MessageGroupId, SequenceNumber and MessageDeduplicationId. */
  groupId?: string;
}

/** An SQS record as the Lambda event source mapping delivers it; `body` is JSON-encoded unless a string. */
export function sqsRecord(body: unknown, options: SqsRecordOptions = {}): SQSRecord {
  const { receiveCount, groupId, ...overrides } = options;
  const messageId = options.messageId ?? randomUUID();
  const attributes: Record<string, string> = {
    ApproximateReceiveCount: String(receiveCount ?? 1),
    SentTimestamp: "1714564800000",
    SenderId: "AIDAIENQZJOLO23YVJ4VO",
    ApproximateFirstReceiveTimestamp: "1714564800005",
  };
  if (groupId !== undefined) {
    attributes.MessageGroupId = groupId;
    attributes.SequenceNumber = String(Date.now());
    attributes.MessageDeduplicationId = randomUUID();
  }
  return {
    messageId,
    receiptHandle: `AQEB-${messageId}`,
    body: typeof body === "string" ? body : JSON.stringify(body),
    attributes: attributes as unknown as SQSRecord["attributes"],
    messageAttributes: {},
    md5OfBody: "e4e68fb7bd0e697a0ae8f1bb342846b3",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:us-west-2:123456789012:my-queue",
    awsRegion: "us-west-2",
    ...overrides,
  };
}

/** An SQS batch: `{ Records }`. Takes built records (typed as `SQSEvent`) or anything a test broke on purpose. */
export function sqsEvent<R extends unknown[] = SQSRecord[]>(...records: R): { Records: R } {
  return { Records: records };
}

/** A message received from a real queue → the record Lambda's SQS poller would hand the function. */
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

/** Received messages → the SQS event Lambda would invoke with. */
export function lambdaEventOf(messages: Message[], eventSourceARN: string): SQSEvent {
  return { Records: messages.map((m) => lambdaRecordOf(m, eventSourceARN)) };
}

// ---------------------------------------------------------------- SNS

/** The JSON an SNS topic delivers to a subscribed SQS queue (raw delivery off); `message` is JSON-encoded unless a string. */
export function snsEnvelope(message: unknown, options: { messageId?: string } = {}): Record<string, string> {
  return {
    Type: "Notification",
    MessageId: options.messageId ?? randomUUID(),
    TopicArn: "arn:aws:sns:us-west-2:123456789012:s3-events",
    Subject: "Amazon S3 Notification",
    Message: typeof message === "string" ? message : JSON.stringify(message),
    Timestamp: "2024-05-01T12:00:00.500Z",
    SignatureVersion: "1",
    Signature: "EXAMPLE",
    SigningCertURL: "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-example.pem",
    UnsubscribeURL: "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe",
  };
}

// ---------------------------------------------------------------- EventBridge

export interface EventBridgeS3Input {
  key: string;
  bucket?: string;
  detailType?: string;
  /** Absent unless given. */
  sequencer?: string;
  /** Absent unless given. */
  requestId?: string;
  id?: string;
  size?: number;
  versionId?: string;
  /** Default: the MD5 of "hello world\n". */
  etag?: string;
}

/** An S3 event delivered by EventBridge (`source: aws.s3`). */
export function eventBridgeS3(input: EventBridgeS3Input): EventBridgeEvent<string, Record<string, unknown>> {
  const bucket = input.bucket ?? EXAMPLE_BUCKET;
  const object: Record<string, unknown> = {
    key: input.key,
    etag: input.etag ?? "b1946ac92492d2347c6235b4d2611184",
  };
  if (input.size !== undefined) object.size = input.size;
  if (input.versionId !== undefined) object["version-id"] = input.versionId;
  if (input.sequencer !== undefined) object.sequencer = input.sequencer;
  const detail: Record<string, unknown> = {
    version: "0",
    bucket: { name: bucket },
    object,
    requester: "123456789012",
    "source-ip-address": "1.2.3.4",
    reason: "PutObject",
  };
  if (input.requestId !== undefined) detail["request-id"] = input.requestId;
  return {
    version: "0",
    id: input.id ?? "17793124-05d4-b198-2fde-7ededc63b103",
    "detail-type": input.detailType ?? "Object Created",
    source: "aws.s3",
    account: "111122223333",
    time: "2021-11-12T00:00:00Z",
    region: "ca-central-1",
    resources: [`arn:aws:s3:::${bucket}`],
    detail,
  };
}

// ---------------------------------------------------------------- guard events

/** An event as the guard takes it: the `n`-th version of `subject` (position `n`, identity `<position>:created`). */
export function guardEvent(
  subject: string,
  n: number,
): { subject: string; identity: string; position: string } {
  const position = positionFromNumber(n);
  return { subject, identity: `${position}:created`, position };
}
