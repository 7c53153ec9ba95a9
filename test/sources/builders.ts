import type { EventBridgeEvent, S3EventRecord, SQSRecord } from "aws-lambda";

/** Builders for invocation payloads, shaped like the AWS documentation examples. */

export interface S3RecordInput {
  /** The key exactly as it appears in the record (already encoded, or deliberately broken). */
  encodedKey: string;
  eventName?: string;
  bucket?: string;
  sequencer?: string;
  size?: number;
  eTag?: string;
  versionId?: string;
  requestId?: string;
  eventTime?: string;
}

export function s3Record(input: S3RecordInput): S3EventRecord {
  const bucket = input.bucket ?? "amzn-s3-demo-bucket";
  const object: S3EventRecord["s3"]["object"] = {
    key: input.encodedKey,
    size: input.size ?? 1024,
    eTag: input.eTag ?? "d41d8cd98f00b204e9800998ecf8427e",
    sequencer: input.sequencer ?? "0055AED6DCD90281E5",
  };
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

export function s3Notification(...records: unknown[]): { Records: unknown[] } {
  return { Records: records };
}

export function sqsRecord(messageId: string, body: unknown, overrides: Partial<SQSRecord> = {}): SQSRecord {
  return {
    messageId,
    receiptHandle: `AQEB-${messageId}`,
    body: typeof body === "string" ? body : JSON.stringify(body),
    attributes: {
      ApproximateReceiveCount: "1",
      SentTimestamp: "1714564800000",
      SenderId: "AIDAIENQZJOLO23YVJ4VO",
      ApproximateFirstReceiveTimestamp: "1714564800005",
    },
    messageAttributes: {},
    md5OfBody: "e4e68fb7bd0e697a0ae8f1bb342846b3",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:us-west-2:123456789012:my-queue",
    awsRegion: "us-west-2",
    ...overrides,
  };
}

export function sqsEvent(...records: unknown[]): { Records: unknown[] } {
  return { Records: records };
}

export function snsEnvelope(messageId: string, message: unknown): Record<string, unknown> {
  return {
    Type: "Notification",
    MessageId: messageId,
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

export interface EventBridgeS3Input {
  key: string;
  detailType?: string;
  sequencer?: string;
  requestId?: string;
  id?: string;
  size?: number;
  versionId?: string;
}

export function eventBridgeS3(input: EventBridgeS3Input): EventBridgeEvent<string, Record<string, unknown>> {
  const object: Record<string, unknown> = {
    key: input.key,
    etag: "b1946ac92492d2347c6235b4d2611184",
  };
  if (input.size !== undefined) object.size = input.size;
  if (input.versionId !== undefined) object["version-id"] = input.versionId;
  if (input.sequencer !== undefined) object.sequencer = input.sequencer;
  const detail: Record<string, unknown> = {
    version: "0",
    bucket: { name: "amzn-s3-demo-bucket" },
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
    resources: ["arn:aws:s3:::amzn-s3-demo-bucket"],
    detail,
  };
}
