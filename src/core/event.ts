import type { Position } from "./position.js";

/** What happened to an S3 object, from the event name. */
export type S3Operation = "created" | "removed" | "other";

/** How an event reached the handler. Every envelope the sources module understands. */
export type EnvelopeKind =
  | "s3" // direct S3 notification (Lambda async invoke)
  | "sqs-s3" // S3 notification in an SQS body
  | "sns-sqs-s3" // S3 notification in an SNS envelope in an SQS body (raw delivery off)
  | "eventbridge" // EventBridge event (Lambda target)
  | "sqs-eventbridge" // EventBridge event in an SQS body
  | "sqs" // plain application message in SQS
  | "kinesis" // Kinesis Data Streams record (Lambda event source mapping)
  | "dynamodb-streams"; // DynamoDB Streams record (Lambda event source mapping)

/** How one event came: envelope metadata, and the correlation id logged on every line about it. */
export interface Delivery {
  envelope: EnvelopeKind;
  /** S3 request id, SQS message id, EventBridge id or a user-named message attribute. */
  correlationId: string;
  /** Index of the record in the invocation (SQS batch index, or Records[] index). */
  recordIndex: number;
  sqs?: SqsDelivery;
  sns?: { messageId: string; topicArn?: string };
  eventBridge?: { id: string; detailType: string; source: string };
  /** Kinesis and DynamoDB Streams: where the record sits in its stream. */
  stream?: StreamDelivery;
}

/** Where a stream record sits: its stream, its shard and its sequence number (the batch item failure identifier). */
export interface StreamDelivery {
  eventSourceArn: string;
  /**
   * Kinesis: from the record's eventID (`shardId-000000000006:<sequence number>`). Absent for DynamoDB Streams, whose
   * records do not name their shard (their eventID is a random hex id).
   */
  shardId?: string;
  /** As the stream sent it: a decimal string (up to 129 digits on Kinesis). */
  sequenceNumber: string;
}

/** How an event came through SQS: the message and its attributes. */
export interface SqsDelivery {
  messageId: string;
  receiptHandle: string;
  /** ApproximateReceiveCount: 1 on the first receive. */
  receiveCount: number;
  messageGroupId?: string;
  eventSourceArn: string;
  attributes: Record<string, string>;
  messageAttributes: Record<string, string>;
}

/** One normalized S3 object event, whatever envelope carried it. */
export interface S3ObjectEvent {
  kind: "s3";
  bucket: string;
  /** Decoded key (notification keys are form-URL-encoded: `+` is a space). */
  key: string;
  versionId?: string;
  /** The sequencer as S3 sent it. Absent for lifecycle transitions, tagging, restore and other events. */
  sequencer?: string;
  /** Normalized sequencer (see position.ts); absent when there is no sequencer. */
  position?: Position;
  operation: S3Operation;
  /** As S3 names it: `ObjectCreated:Put`, `ObjectRemoved:Delete`; EventBridge: `Object Created`. */
  eventName: string;
  eventTime: string;
  size?: number;
  etag?: string;
  requestId?: string;
  region?: string;
  /** `bucket/key`: what order and exclusivity are scoped to. */
  subject: string;
  /** What makes two deliveries the same event, unique within the subject. */
  identity: string;
}

/** `s3:TestEvent`, sent once when a notification configuration is saved. Acknowledge and count. */
export interface S3TestEvent {
  kind: "s3-test";
  bucket: string;
  requestId?: string;
  eventTime?: string;
}

/** A plain application message (e.g. an order) from SQS. Subject, identity and position are derived by the user. */
export interface MessageEvent {
  kind: "message";
  /** The raw body. */
  body: string;
  /**
   * The message's id: the relay's `eonceMessageId` when an outbox relay sent it (the same on every send of the
   * message: src/sources/relayed-id.ts), else the transport's (SQS, SNS or EventBridge id).
   */
  messageId: string;
}

/** One Kinesis Data Streams record. Subject, identity and position default to partition key and sequence number. */
export interface KinesisRecordEvent {
  kind: "kinesis";
  /** From the event source ARN (`arn:aws:kinesis:<region>:<account>:stream/<name>`). */
  streamName: string;
  partitionKey: string;
  /** As Kinesis sent it: a decimal string. */
  sequenceNumber: string;
  /** `positionFromSequenceNumber(sequenceNumber)`: compares as the number does. */
  position: Position;
  /** The record's data, base64-decoded. */
  data: Uint8Array;
  /**
   * The data parsed as JSON, when it is UTF-8 JSON text; the property is absent otherwise (test it with
   * `"json" in event`: JSON `null` is a present `null`).
   */
  json?: unknown;
  /** Epoch seconds (with a fraction), as Kinesis sent it. */
  approximateArrivalTimestamp: number;
}

/** What changed an item: Lambda's `eventName` of a DynamoDB Streams record. */
export type DynamoDBChangeName = "INSERT" | "MODIFY" | "REMOVE";

/** What a DynamoDB stream records of each change (the table's `StreamViewType`). */
export type DynamoDBStreamViewType = "KEYS_ONLY" | "NEW_IMAGE" | "OLD_IMAGE" | "NEW_AND_OLD_IMAGES";

/**
 * One DynamoDB Streams record: a change to one item. Keys and images are unmarshalled as `@aws-sdk/util-dynamodb`
 * does: numbers are `number`s when they read back as the same decimal (safe integers, up to 15 significant digits),
 * else util-dynamodb `NumberValue`s (their `value` is the decimal string); binaries are `Uint8Array`s, sets `Set`s.
 */
export interface DynamoDBChangeEvent {
  kind: "dynamodb";
  eventName: DynamoDBChangeName;
  /** From the event source ARN (`arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>`). */
  tableName: string;
  keys: Record<string, unknown>;
  /** Present with the view types that carry it (NEW_IMAGE, NEW_AND_OLD_IMAGES; not on REMOVE). */
  newImage?: Record<string, unknown>;
  /** Present with the view types that carry it (OLD_IMAGE, NEW_AND_OLD_IMAGES; not on INSERT). */
  oldImage?: Record<string, unknown>;
  viewType: DynamoDBStreamViewType;
  /** As the stream sent it: a decimal string. */
  sequenceNumber: string;
  /** `positionFromSequenceNumber(sequenceNumber)`: compares as the number does. */
  position: Position;
  /** Epoch seconds, as the stream sent it (absent in some hand-written events, e.g. the Lambda guide's example). */
  approximateCreationDateTime?: number;
  /** eventName is REMOVE. */
  removal: boolean;
  /** A REMOVE made by TTL (userIdentity `{ type: "Service", principalId: "dynamodb.amazonaws.com" }`). */
  ttlExpired: boolean;
  /**
   * The item: the table name, `/`, then its keys as canonical JSON (key names sorted, each `{"<type>":"<value>"}` as
   * DynamoDB marshals it), e.g. `orders/{"pk":{"S":"o-1"},"sk":{"N":"2"}}`. The default subject.
   */
  item: string;
  /** The record's eventID (a hex id unique per stream record). */
  eventId: string;
}

/**
 * An event as a source parser returns it: an S3 object event, an S3 test event, an application message, a Kinesis
 * record or a DynamoDB change.
 */
export type NormalizedEvent =
  | S3ObjectEvent
  | S3TestEvent
  | MessageEvent
  | KinesisRecordEvent
  | DynamoDBChangeEvent;
