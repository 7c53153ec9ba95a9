import type { PutEventsCommandInput } from "@aws-sdk/client-eventbridge";
import type { PublishCommandInput } from "@aws-sdk/client-sns";
import type { MessageAttributeValue, SendMessageCommandInput } from "@aws-sdk/client-sqs";
import { fifoId } from "../lambda/fifo-producer.js";
import { OutboxEntryInvalidError } from "./errors.js";
import { MAX_OUTBOX_ATTRIBUTES, OUTBOX_MESSAGE_ID_ATTRIBUTE } from "./message-id.js";
import type { Destination, OutboxEntry } from "./types.js";

/**
 * The request each AWS destination gets for an outbox entry (pure, so that the EventBridge one, which has no local
 * server, is tested as built). Kept out of the `effectively-once/outbox` declarations: their types name the SNS and
 * EventBridge clients, optional peers a user may not have installed.
 */

/**
 * SQS and SNS take at most 10 message attributes (an SNS message over it is not delivered raw to SQS); the message
 * id takes one of them.
 */

/** SendMessage's input for an entry to an SQS queue. */
export function sqsSendMessageInput(entry: OutboxEntry): SendMessageCommandInput {
  const { queueUrl } = destinationOf(entry, "sqs", "SQS");
  return { QueueUrl: queueUrl, MessageBody: entry.body, ...messageFields(entry, queueUrl) };
}

/** Publish's input for an entry to an SNS topic. */
export function snsPublishInput(entry: OutboxEntry): PublishCommandInput {
  const { topicArn } = destinationOf(entry, "sns", "SNS");
  return { TopicArn: topicArn, Message: entry.body, ...messageFields(entry, topicArn) };
}

/**
 * PutEvents' input for an entry to an EventBridge bus: one event, its detail the body's object with the message id
 * added as `eonceMessageId` (EventBridge has no message attributes; the id replaces a field of that name).
 */
export function eventBridgePutEventsInput(entry: OutboxEntry): PutEventsCommandInput {
  const d = destinationOf(entry, "eventbridge", "EventBridge");
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

/** The entry's destination, when it is of `kind`: an entry meant for another service is refused. */
function destinationOf<K extends Destination["kind"]>(
  entry: OutboxEntry,
  kind: K,
  service: string,
): Extract<Destination, { kind: K }> {
  const d = entry.destination;
  if (d.kind !== kind) throw new OutboxEntryInvalidError(entry, `not an ${service} destination`);
  return d as Extract<Destination, { kind: K }>;
}

/** The fields SQS's SendMessage and SNS's Publish share: the message attributes, and the FIFO ids. */
function messageFields(
  entry: OutboxEntry,
  queueOrTopic: string,
): Pick<SendMessageCommandInput, "MessageAttributes" | "MessageGroupId" | "MessageDeduplicationId"> {
  return { MessageAttributes: messageAttributes(entry), ...fifoIds(entry, queueOrTopic) };
}

/** FIFO queues and topics (name ending `.fifo`): the entry's group, and its message id as deduplication id. */
function fifoIds(
  entry: OutboxEntry,
  queueOrTopic: string,
): { MessageGroupId?: string; MessageDeduplicationId?: string } {
  if (!queueOrTopic.endsWith(".fifo")) return {};
  return { MessageGroupId: fifoId(entry.groupId), MessageDeduplicationId: fifoId(entry.messageId) };
}
