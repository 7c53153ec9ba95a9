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
  | "sqs"; // plain application message in SQS

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
  messageId: string;
}

/** An event as a source parser returns it: an S3 object event, an S3 test event or an application message. */
export type NormalizedEvent = S3ObjectEvent | S3TestEvent | MessageEvent;
