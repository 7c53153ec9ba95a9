import { OUTBOX_MESSAGE_ID_ATTRIBUTE } from "../outbox/message-id.js";
import { isObject } from "./fields.js";

/**
 * A message an outbox relay sent carries its id (src/outbox): as the SQS or SNS message attribute `eonceMessageId`,
 * or as the field `eonceMessageId` of an EventBridge event's detail. The id is fixed at the publishing commit, so it
 * is the same on every send of the message (a relay that crashed after sending, two relays racing, a resend after
 * SQS FIFO's 5-minute window), while the transport's own message id differs per send: the parsers take the relay's
 * id as the message's `messageId`, so a guarded consumer's default subject and identity are the message's, and two
 * guarded pipelines chained are exactly-once without configuration. Only the id's own form is taken (`eo1_` and 40
 * base64url characters); anything else in the attribute is ignored, and the transport's id stays.
 */
const RELAYED_ID = /^eo1_[A-Za-z0-9_-]{40}$/;

function relayed(value: unknown): string | undefined {
  return typeof value === "string" && RELAYED_ID.test(value) ? value : undefined;
}

/** From an SQS record's message attributes (name → stringValue, as src/sources/sqs-metadata.ts reads them). */
export function relayedIdOfAttributes(
  attributes: Readonly<Record<string, string>> | undefined,
): string | undefined {
  return attributes && Object.hasOwn(attributes, OUTBOX_MESSAGE_ID_ATTRIBUTE)
    ? relayed(attributes[OUTBOX_MESSAGE_ID_ATTRIBUTE])
    : undefined;
}

/** From an SNS envelope's `MessageAttributes` (`{ name: { Type, Value } }`). */
export function relayedIdOfSnsEnvelope(envelope: Record<string, unknown>): string | undefined {
  const attributes = envelope.MessageAttributes;
  if (!isObject(attributes) || !Object.hasOwn(attributes, OUTBOX_MESSAGE_ID_ATTRIBUTE)) return undefined;
  const attribute = attributes[OUTBOX_MESSAGE_ID_ATTRIBUTE];
  return isObject(attribute) ? relayed(attribute.Value) : undefined;
}

/** From an EventBridge event's `detail`. */
export function relayedIdOfEventBridge(event: Record<string, unknown>): string | undefined {
  const detail = event.detail;
  return isObject(detail) && Object.hasOwn(detail, OUTBOX_MESSAGE_ID_ATTRIBUTE)
    ? relayed(detail[OUTBOX_MESSAGE_ID_ATTRIBUTE])
    : undefined;
}
