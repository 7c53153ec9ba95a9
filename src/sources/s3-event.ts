import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { S3ObjectEvent } from "../core/event.js";
import { s3Identity, s3Operation, s3Subject } from "../core/identity.js";
import { normalizeSequencer } from "../core/position.js";
import {
  type JsonObject,
  join,
  optionalCount,
  optionalString,
  requireField,
  requireString,
  requireTime,
} from "./fields.js";

/** What both S3 envelopes (notification record, EventBridge detail) carry, already decoded. */
export type S3EventFields = Pick<
  S3ObjectEvent,
  "bucket" | "key" | "versionId" | "eventName" | "eventTime" | "size" | "etag" | "requestId" | "region"
> & {
  /** As found: checked and normalized by buildS3Event. */
  sequencer?: unknown;
  sequencerPath: string;
};

/**
 * Where one envelope (a notification record, an EventBridge event) keeps the fields of its S3 event: the same
 * fields, each under the envelope's own name, the bucket and object under `container`, the key in its own encoding.
 */
export interface S3Envelope {
  eventName: string;
  eventTime: string;
  region: string;
  /** The field holding `bucket` and `object` (a record's `s3`, an EventBridge `detail`). */
  container: string;
  /** The object's version id and ETag fields. */
  versionId: string;
  etag: string;
  decodeKey: (raw: string, path: string) => string;
  /** The request id, from the envelope (`path`) or its container (`containerPath`). */
  requestId(
    envelope: JsonObject,
    path: string,
    container: JsonObject,
    containerPath: string,
  ): string | undefined;
}

/** The S3 event an envelope carries, read by its names (`e`); `path` points at the envelope, for errors. */
export function envelopeS3Event(envelope: JsonObject, path: string, e: S3Envelope): S3ObjectEvent {
  const eventName = requireString(envelope, e.eventName, path);
  const eventTime = requireTime(envelope, e.eventTime, path);
  const region = optionalString(envelope, e.region, path);
  const containerPath = join(path, e.container);
  const container = requireField(envelope, e.container, path);
  // Assigned, not spread: a literal with properties after a spread takes V8's slow path (µs per event).
  const fields: S3EventFields = Object.assign(bucketObjectFields(container, containerPath, e), {
    eventName,
    eventTime,
    requestId: e.requestId(envelope, path, container, containerPath),
    region,
  });
  return buildS3Event(fields);
}

/** The bucket and object fields under `container`, by the envelope's names and key encoding. */
function bucketObjectFields(
  container: JsonObject,
  path: string,
  e: S3Envelope,
): Pick<S3EventFields, "bucket" | "key" | "versionId" | "sequencer" | "sequencerPath" | "size" | "etag"> {
  const bucket = requireBucketName(requireField(container, "bucket", path), "name", join(path, "bucket"));
  const objectPath = join(path, "object");
  const object = requireField(container, "object", path);
  return {
    bucket,
    key: e.decodeKey(requireString(object, "key", objectPath), join(objectPath, "key")),
    versionId: optionalString(object, e.versionId, objectPath),
    sequencer: object.sequencer,
    sequencerPath: join(objectPath, "sequencer"),
    size: optionalCount(object, "size", objectPath),
    etag: optionalString(object, e.etag, objectPath),
  };
}

/** Builds the normalized event: position from the sequencer, then operation, subject and identity. */
export function buildS3Event(f: S3EventFields): S3ObjectEvent {
  const hasSequencer = f.sequencer !== undefined && f.sequencer !== null;
  // Throws InvalidSequencerError (a MalformedEventError) carrying the sequencer's path.
  const position = hasSequencer ? normalizeSequencer(f.sequencer, f.sequencerPath) : undefined;
  const operation = s3Operation(f.eventName);
  const event: S3ObjectEvent = {
    kind: "s3",
    bucket: f.bucket,
    key: f.key,
    operation,
    eventName: f.eventName,
    eventTime: f.eventTime,
    subject: s3Subject(f.bucket, f.key),
    identity: s3Identity({
      bucket: f.bucket,
      key: f.key,
      versionId: f.versionId,
      eventName: f.eventName,
      eventTime: f.eventTime,
      requestId: f.requestId,
      position,
      operation,
    }),
  };
  if (f.versionId !== undefined) event.versionId = f.versionId;
  if (hasSequencer) event.sequencer = f.sequencer as string;
  if (position !== undefined) event.position = position;
  if (f.size !== undefined) event.size = f.size;
  if (f.etag !== undefined) event.etag = f.etag;
  if (f.requestId !== undefined) event.requestId = f.requestId;
  if (f.region !== undefined) event.region = f.region;
  return event;
}

/**
 * Bucket names are at most 255 characters (legacy us-east-1 names; 63 today) and never contain `/`.
 * The `/` check matters: the subject is `bucket/key`, so a `/` in the bucket would make two
 * different objects share one subject.
 */
export function requireBucketName(obj: JsonObject, field: string, path: string): string {
  const name = requireString(obj, field, path);
  if (name.length > 255 || name.includes("/")) {
    throw new MalformedEventError(`not a valid bucket name: ${describeValue(name)}`, join(path, field));
  }
  return name;
}
