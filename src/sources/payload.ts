import { describeText, describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { Delivery, NormalizedEvent } from "../core/event.js";
import {
  eventBridgeMetadata,
  eventBridgeS3Events,
  isEventBridgeEvent,
  isS3EventBridgeEvent,
} from "./eventbridge.js";
import { type JsonObject, join } from "./fields.js";
import { relayedIdOfAttributes, relayedIdOfEventBridge, relayedIdOfSnsEnvelope } from "./relayed-id.js";
import { isS3Notification, isS3TestEvent, parseS3Notification, parseS3TestEvent } from "./s3-notification.js";
import { isSnsEnvelope, snsMetadata } from "./sns.js";
import type { ResolvedParseOptions } from "./types.js";

/** What one delivery unit carries, before its correlation id is chosen. */
export interface Payload {
  events: NormalizedEvent[];
  error?: MalformedEventError;
  /** The envelope's preferred correlation id (S3 request id, EventBridge id), if it has one. */
  correlationId?: string;
}

/**
 * Classifies an SQS body and fills `delivery` (envelope, sns, eventBridge) as it learns them, so that
 * an error thrown half-way still reports the envelope it was found in. Throws MalformedEventError.
 */
export function parseSqsBody(
  body: string,
  path: string,
  delivery: Delivery,
  messageId: string,
  options: ResolvedParseOptions,
): Payload {
  messageId = relayedIdOfAttributes(delivery.sqs?.messageAttributes) ?? messageId;
  const json = parseJson(body);
  if (!json.ok) {
    // Application messages need not be JSON; notifications always are.
    if (options.messages === "accept") return { events: [{ kind: "message", body, messageId }] };
    throw new MalformedEventError(`body is not valid JSON: ${describeText(json.error)}`, path);
  }
  const parsed = json.value;
  if (isS3Notification(parsed) || isS3TestEvent(parsed)) {
    delivery.envelope = "sqs-s3";
    return s3Payload(parsed, path);
  }
  if (isSnsEnvelope(parsed)) {
    delivery.sns = snsMetadata(parsed, path);
    const messagePath = join(path, "Message");
    const json = parseJson(parsed.Message);
    const inner = json.ok ? json.value : undefined;
    if (isS3Notification(inner) || isS3TestEvent(inner)) {
      delivery.envelope = "sns-sqs-s3";
      return s3Payload(inner, messagePath);
    }
    // SNS fan-out of an application message: the payload is the SNS Message, not the envelope.
    const id = relayedIdOfSnsEnvelope(parsed) ?? messageId;
    return message(() => parsed.Message, id, "the SNS Message", messagePath, options);
  }
  if (isEventBridgeEvent(parsed)) {
    delivery.envelope = "sqs-eventbridge";
    return eventBridgePayload(parsed, path, delivery, messageId, options);
  }
  return message(() => body, messageId, "the body", path, options);
}

/**
 * An EventBridge event (direct or from an SQS body). S3 events become S3ObjectEvents; events from
 * other sources are application messages whose body is the JSON of `detail`.
 */
export function eventBridgePayload(
  value: JsonObject,
  path: string,
  delivery: Delivery,
  messageId: string,
  options: ResolvedParseOptions,
): Payload {
  if (isS3EventBridgeEvent(value)) return eventBridgeS3Events(value, path, delivery);
  const meta = eventBridgeMetadata(value, path);
  delivery.eventBridge = meta;
  const what = `an EventBridge event from ${describeValue(meta.source)}`;
  const id = relayedIdOfEventBridge(value) ?? messageId;
  const payload = message(() => detailBody(value, path), id, what, path, options);
  payload.correlationId = meta.id;
  return payload;
}

/** JSON.stringify recurses: a detail nested a few thousand levels deep overflows the stack (RangeError). */
function detailBody(value: JsonObject, path: string): string {
  try {
    return JSON.stringify(value.detail ?? null);
  } catch (cause) {
    throw new MalformedEventError(
      "detail cannot be serialized as a message body (nested too deeply?)",
      join(path, "detail"),
      {
        cause,
      },
    );
  }
}

function s3Payload(value: JsonObject, path: string): Payload {
  if (isS3TestEvent(value)) {
    const event = parseS3TestEvent(value, path);
    return { events: [event], correlationId: event.requestId };
  }
  const parsed = parseS3Notification(value as JsonObject & { Records: unknown[] }, path);
  const payload: Payload = { events: parsed.events, correlationId: parsed.events[0]?.requestId };
  if (parsed.error) payload.error = parsed.error;
  return payload;
}

/** `body` is only computed for accepted messages: a rejected one gets the rejection, not a body error. */
function message(
  body: () => string,
  messageId: string,
  what: string,
  path: string,
  options: ResolvedParseOptions,
): Payload {
  if (options.messages === "reject") {
    throw new MalformedEventError(
      `${what} is not an S3 notification, S3 test event, SNS envelope of one, or EventBridge S3 event ` +
        `(application messages need messages: "accept")`,
      path,
    );
  }
  return { events: [{ kind: "message", body: body(), messageId }] };
}

type Json = { ok: true; value: unknown } | { ok: false; error: string };

function parseJson(text: string): Json {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}
