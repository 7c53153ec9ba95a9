import type { DynamoDBRecord, KinesisStreamRecord } from "aws-lambda";

/** Builders of stream records in the shape Lambda delivers them (test/fixtures/events has the AWS examples). */

export const KINESIS_STREAM_ARN = "arn:aws:kinesis:us-east-2:123456789012:stream/orders";
export const DYNAMODB_STREAM_ARN =
  "arn:aws:dynamodb:us-east-2:123456789012:table/orders/stream/2026-01-01T00:00:00.000";

let counter = 0n;
/** A new Kinesis-like sequence number (56 digits), above every one handed out before in this process. */
export function nextSequenceNumber(): string {
  counter++;
  return (49590338271490256608559692538361571095921575989136588898n + counter * 1000n).toString();
}

/** A new DynamoDB Streams-like sequence number (28 digits), above every one handed out before in this process. */
export function nextDynamoDBSequenceNumber(): string {
  counter++;
  return (4421584500000000017450439091n + counter).toString();
}

export interface KinesisRecordInput {
  partitionKey: string;
  /** The record's data: a value is sent as its JSON, a string as is. */
  data: unknown;
  sequenceNumber?: string;
  shardId?: string;
  arn?: string;
}

export function kinesisRecord(input: KinesisRecordInput): KinesisStreamRecord {
  const sequenceNumber = input.sequenceNumber ?? nextSequenceNumber();
  const shardId = input.shardId ?? "shardId-000000000000";
  const text = typeof input.data === "string" ? input.data : JSON.stringify(input.data);
  return {
    kinesis: {
      kinesisSchemaVersion: "1.0",
      partitionKey: input.partitionKey,
      sequenceNumber,
      data: Buffer.from(text).toString("base64"),
      approximateArrivalTimestamp: 1767225600.123,
    },
    eventSource: "aws:kinesis",
    eventVersion: "1.0",
    eventID: `${shardId}:${sequenceNumber}`,
    eventName: "aws:kinesis:record",
    invokeIdentityArn: "arn:aws:iam::123456789012:role/lambda-role",
    awsRegion: "us-east-2",
    eventSourceARN: input.arn ?? KINESIS_STREAM_ARN,
  };
}

export interface DynamoDBRecordInput {
  eventName: "INSERT" | "MODIFY" | "REMOVE";
  keys: Record<string, { S: string } | { N: string }>;
  newImage?: Record<string, unknown>;
  oldImage?: Record<string, unknown>;
  sequenceNumber?: string;
  ttl?: boolean;
}

export function dynamodbRecord(input: DynamoDBRecordInput): DynamoDBRecord {
  const sequenceNumber = input.sequenceNumber ?? nextDynamoDBSequenceNumber();
  const record = {
    eventID: `e${sequenceNumber}`,
    eventName: input.eventName,
    eventVersion: "1.1",
    eventSource: "aws:dynamodb",
    awsRegion: "us-east-2",
    dynamodb: {
      ApproximateCreationDateTime: 1767225600,
      Keys: input.keys,
      ...(input.newImage ? { NewImage: input.newImage } : {}),
      ...(input.oldImage ? { OldImage: input.oldImage } : {}),
      SequenceNumber: sequenceNumber,
      SizeBytes: 26,
      StreamViewType: "NEW_AND_OLD_IMAGES",
    },
    eventSourceARN: DYNAMODB_STREAM_ARN,
    ...(input.ttl ? { userIdentity: { type: "Service", principalId: "dynamodb.amazonaws.com" } } : {}),
  };
  return record as DynamoDBRecord;
}

export function streamEvent<R>(...records: R[]): { Records: R[] } {
  return { Records: records };
}
