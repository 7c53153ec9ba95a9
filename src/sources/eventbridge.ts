import type { Delivery, S3ObjectEvent } from "../core/event.js";
import { isObject, type JsonObject, optionalString, requireString } from "./fields.js";
import { requireValidS3Key } from "./key-encoding.js";
import { envelopeS3Event, type S3Envelope } from "./s3-event.js";

/** Any EventBridge event: `{"id","detail-type","source","time","detail",...}`. */
export function isEventBridgeEvent(value: unknown): value is JsonObject {
  return (
    isObject(value) &&
    typeof value["detail-type"] === "string" &&
    typeof value.source === "string" &&
    Object.hasOwn(value, "detail")
  );
}

/** S3 sends every object event to EventBridge with source `aws.s3`; the detail-type names the change. */
export function isS3EventBridgeEvent(value: JsonObject): boolean {
  return value.source === "aws.s3";
}

export function eventBridgeMetadata(value: JsonObject, path: string): NonNullable<Delivery["eventBridge"]> {
  return {
    id: requireString(value, "id", path),
    detailType: requireString(value, "detail-type", path),
    source: requireString(value, "source", path),
  };
}

/** Where EventBridge keeps an S3 event's fields: `detail` holds bucket and object; keys are as stored. */
const EVENTBRIDGE_S3: S3Envelope = {
  eventName: "detail-type",
  eventTime: "time",
  region: "region",
  container: "detail",
  versionId: "version-id",
  etag: "etag",
  decodeKey: requireValidS3Key,
  requestId: (_event, _path, detail, detailPath) => optionalString(detail, "request-id", detailPath),
};

/**
 * An S3 event delivered by EventBridge (`Object Created`, `Object Deleted`, `Object Restore Completed`,
 * `Object Tags Added`, `Object Storage Class Changed`, ...). The key is NOT URL-decoded: EventBridge
 * carries the key as stored (see docs/sources.md, "EventBridge keys"); it is only checked against S3's
 * limits. `eventName` is the detail-type, `eventTime` the envelope time.
 */
export function parseEventBridgeS3(value: JsonObject, path: string): S3ObjectEvent {
  return envelopeS3Event(value, path, EVENTBRIDGE_S3);
}

/**
 * An S3 event from EventBridge as one unit's events: its metadata on `delivery`, then the event; the correlation id
 * is S3's request id, else the EventBridge event's id. Shared by every parser that meets one (direct, in an SQS body).
 */
export function eventBridgeS3Events(
  value: JsonObject,
  path: string,
  delivery: Delivery,
): { events: S3ObjectEvent[]; correlationId: string } {
  const meta = eventBridgeMetadata(value, path);
  delivery.eventBridge = meta;
  const event = parseEventBridgeS3(value, path);
  return { events: [event], correlationId: event.requestId ?? meta.id };
}
