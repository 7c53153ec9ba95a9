import type { PutEventsCommandInput } from "@aws-sdk/client-eventbridge";
import type { PublishCommandInput } from "@aws-sdk/client-sns";
import type { MessageAttributeValue, SendMessageCommandInput } from "@aws-sdk/client-sqs";
import { fifoId } from "../lambda/fifo-producer.js";
import { OutboxEntryInvalidError } from "./errors.js";
import { OUTBOX_MESSAGE_ID_ATTRIBUTE } from "./message-id.js";
import type { OutboxEntry } from "./types.js";

/**
 * The request each AWS destination gets for an outbox entry (pure, so that the EventBridge one, which has no local
 * server, is tested as built). Kept out of the `effectively-once/outbox` declarations: their types name the SNS and
 * EventBridge clients, optional peers a user may not have installed.
 */

/**
 * SQS and SNS take at most 10 message attributes (an SNS message over it is not delivered raw to SQS); the message
 * id takes one of them.
 */
const MAX_OUTBOX_ATTRIBUTES = 9;

/** SendMessage's input for an entry to an SQS queue. */
export function sqsSendMessageInput(entry: OutboxEntry): SendMessageCommandInput {
  if (entry.destination.kind !== "sqs") throw new OutboxEntryInvalidError(entry, "not an SQS destination");
  const { queueUrl } = entry.destination;
  return {
    QueueUrl: queueUrl,
    MessageBody: entry.body,
    MessageAttributes: messageAttributes(entry),
    ...fifoIds(entry, queueUrl),
  };
}

/** Publish's input for an entry to an SNS topic. */
export function snsPublishInput(entry: OutboxEntry): PublishCommandInput {
  if (entry.destination.kind !== "sns") throw new OutboxEntryInvalidError(entry, "not an SNS destination");
  const { topicArn } = entry.destination;
  return {
    TopicArn: topicArn,
    Message: entry.body,
    MessageAttributes: messageAttributes(entry),
    ...fifoIds(entry, topicArn),
  };
}

/**
 * PutEvents' input for an entry to an EventBridge bus: one event, its detail the body's object with the message id
 * added as `eonceMessageId` (EventBridge has no message attributes; the id replaces a field of that name).
 */
export function eventBridgePutEventsInput(entry: OutboxEntry): PutEventsCommandInput {
  const d = entry.destination;
  if (d.kind !== "eventbridge") throw new OutboxEntryInvalidError(entry, "not an EventBridge destination");
  const detail = jsonObject(entry);
  return {
    Entries: [
      {
        EventBusName: d.eventBusName,
        Source: d.source,
        DetailType: d.detailType,
        Detail: JSON.stringify({ ...detail, [OUTBOX_MESSAGE_ID_ATTRIBUTE]: entry.messageId }),
      },
    ],
  };
}

function jsonObject(entry: OutboxEntry): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(entry.body);
  } catch (cause) {
    throw new OutboxEntryInvalidError(
      entry,
      "an EventBridge message is a JSON object (its body is not JSON)",
      {
        cause,
      },
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new OutboxEntryInvalidError(entry, "an EventBridge message is a JSON object (the event's detail)");
  }
  return value as Record<string, unknown>;
}

function messageAttributes(entry: OutboxEntry): Record<string, MessageAttributeValue> {
  const given = Object.entries(entry.attributes ?? {});
  if (given.length > MAX_OUTBOX_ATTRIBUTES) {
    throw new OutboxEntryInvalidError(
      entry,
      `${given.length} attributes: SQS and SNS take ${MAX_OUTBOX_ATTRIBUTES} besides ${OUTBOX_MESSAGE_ID_ATTRIBUTE}`,
    );
  }
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of given) attributes[name] = { DataType: "String", StringValue: value };
  // Last, so that an attribute of the same name (publish refuses one) cannot replace the id.
  attributes[OUTBOX_MESSAGE_ID_ATTRIBUTE] = { DataType: "String", StringValue: entry.messageId };
  return attributes;
}

/** FIFO queues and topics (name ending `.fifo`): the entry's group, and its message id as deduplication id. */
function fifoIds(
  entry: OutboxEntry,
  queueOrTopic: string,
): { MessageGroupId?: string; MessageDeduplicationId?: string } {
  if (!queueOrTopic.endsWith(".fifo")) return {};
  return { MessageGroupId: fifoId(entry.groupId), MessageDeduplicationId: fifoId(entry.messageId) };
}
