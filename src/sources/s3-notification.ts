import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { S3ObjectEvent, S3TestEvent } from "../core/event.js";
import { index, isObject, type JsonObject, join, optionalString, requireObject } from "./fields.js";
import { decodeS3NotificationKey } from "./key-encoding.js";
import { envelopeS3Event, requireBucketName, type S3Envelope } from "./s3-event.js";

/** `{"Records":[{"eventSource":"aws:s3",...}]}`: what S3 sends to Lambda, SQS and SNS. */
export function isS3Notification(value: unknown): value is JsonObject & { Records: unknown[] } {
  return (
    isObject(value) &&
    Array.isArray(value.Records) &&
    value.Records.some((r) => isObject(r) && (r.eventSource === "aws:s3" || isObject(r.s3)))
  );
}

/** `{"Service":"Amazon S3","Event":"s3:TestEvent",...}`, sent once when a notification configuration is saved. */
export function isS3TestEvent(value: unknown): value is JsonObject & { Event: "s3:TestEvent" } {
  return isObject(value) && value.Event === "s3:TestEvent";
}

/** Where a notification record keeps its S3 event: `s3` holds bucket and object; keys are URL-encoded. */
const S3_RECORD: S3Envelope = {
  eventName: "eventName",
  eventTime: "eventTime",
  region: "awsRegion",
  container: "s3",
  versionId: "versionId",
  etag: "eTag",
  decodeKey: decodeS3NotificationKey,
  requestId: requestIdOf,
};

/**
 * One notification record. `path` points at the record (`Records[2].body.Records[0]`), so errors read
 * `... (at Records[2].body.Records[0].s3.object.key)`.
 */
export function parseS3Record(value: unknown, path: string): S3ObjectEvent {
  const record = requireObject(value, path);
  if (record.eventSource !== "aws:s3") {
    throw new MalformedEventError(
      `expected eventSource "aws:s3", got ${describeValue(record.eventSource)}`,
      join(path, "eventSource"),
    );
  }
  return envelopeS3Event(record, path, S3_RECORD);
}

/** The S3 request id, read leniently: it only feeds the correlation id and the fallback identity hash. */
export function requestIdOf(record: JsonObject, path: string): string | undefined {
  const elements = record.responseElements;
  if (elements === undefined || elements === null) return undefined;
  const elementsPath = join(path, "responseElements");
  return optionalString(requireObject(elements, elementsPath), "x-amz-request-id", elementsPath);
}

export interface ParsedRecords {
  events: S3ObjectEvent[];
  /** The first bad record; the good ones are still in `events`. */
  error?: MalformedEventError;
}

/** Every record of a notification carried as one message (an SQS body or SNS Message). */
export function parseS3Notification(value: JsonObject & { Records: unknown[] }, path: string): ParsedRecords {
  const out: ParsedRecords = { events: [] };
  const recordsPath = join(path, "Records");
  value.Records.forEach((record, i) => {
    try {
      out.events.push(parseS3Record(record, index(recordsPath, i)));
    } catch (e) {
      if (!(e instanceof MalformedEventError)) throw e;
      out.error ??= e;
    }
  });
  return out;
}

/**
 * S3's test event never carries `Records`. One that does is not something S3 sent: taking it as a test event
 * would drop the records, taking it as a notification would ignore what it says it is, so it is malformed.
 */
export function parseS3TestEvent(value: JsonObject, path: string): S3TestEvent {
  if (Object.hasOwn(value, "Records")) {
    throw new MalformedEventError(
      "an s3:TestEvent does not carry Records; this is neither a test event nor a notification",
      join(path, "Records"),
    );
  }
  const event: S3TestEvent = { kind: "s3-test", bucket: requireBucketName(value, "Bucket", path) };
  const requestId = optionalString(value, "RequestId", path);
  const time = optionalString(value, "Time", path);
  if (requestId !== undefined) event.requestId = requestId;
  if (time !== undefined) event.eventTime = time;
  return event;
}
