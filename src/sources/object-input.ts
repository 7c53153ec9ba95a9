import type { S3ObjectEvent } from "../core/event.js";

/** The GetObject / HeadObject parameters that read exactly the object an event describes. */
export interface S3ObjectInput {
  Bucket: string;
  Key: string;
  VersionId?: string;
  IfMatch?: string;
}

/**
 * Parameters that read the object version this event is about, not whatever the key holds now. A retry of an older
 * event that reads the key's current object computes a newer upload's result under the older event's position:
 * the fence keeps the order right, but the effect is written once more with other bytes. With a version id
 * (versioned bucket) the read gets that version; otherwise it is conditional on the event's ETag (`If-Match`), and
 * S3 answers 412 once the object was replaced ({@link isObjectReplaced}): the newer upload's own event will write
 * the result, so the older event has nothing left to do. Events without either (deletes, some copies) read the key
 * as it is.
 */
export function s3ObjectInput(
  event: Pick<S3ObjectEvent, "bucket" | "key" | "versionId" | "etag">,
): S3ObjectInput {
  const input: S3ObjectInput = { Bucket: event.bucket, Key: event.key };
  if (event.versionId !== undefined && event.versionId !== "" && event.versionId !== "null") {
    input.VersionId = event.versionId;
  } else if (event.etag !== undefined && event.etag !== "") {
    // Notifications carry the ETag unquoted; the header wants the quoted form S3 returns.
    input.IfMatch = event.etag.startsWith('"') ? event.etag : `"${event.etag}"`;
  }
  return input;
}

/** Whether a read with {@link s3ObjectInput}'s `IfMatch` failed because the object is no longer that upload. */
export function isObjectReplaced(error: unknown): boolean {
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  return e?.$metadata?.httpStatusCode === 412 || e?.name === "PreconditionFailed";
}
