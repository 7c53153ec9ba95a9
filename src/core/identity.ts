import { createHash } from "node:crypto";
import type { S3ObjectEvent, S3Operation } from "./event.js";
import type { Position } from "./position.js";

/** The subject of an S3 object: `bucket/key` (what order and exclusivity are scoped to). */
export function s3Subject(bucket: string, key: string): string {
  return `${bucket}/${key}`;
}

/**
 * Identity of an S3 event, unique within its subject (docs/architecture.md, Concepts).
 * With a sequencer: the position and operation (the sequencer is unique per key and change).
 * Without one (lifecycle transition, tagging, restore): a hash of what tells two such events apart.
 */
export function s3Identity(
  e: Pick<S3ObjectEvent, "versionId" | "eventName" | "eventTime" | "requestId"> & {
    bucket: string;
    key: string;
    position?: Position;
    operation: S3Operation;
  },
): string {
  if (e.position !== undefined) return `${e.position}:${e.operation}`;
  const h = createHash("sha256");
  for (const part of [e.bucket, e.key, e.versionId ?? "", e.eventName, e.eventTime, e.requestId ?? ""]) {
    h.update(part).update("\0");
  }
  return `h:${h.digest("base64url").slice(0, 32)}`;
}

/**
 * Operation from an S3 notification event name (`ObjectCreated:Put`, `s3:ObjectRemoved:Delete`) or an EventBridge
 * detail-type (`Object Created`). Lifecycle expirations remove the object (EventBridge sends them as `Object Deleted`),
 * so they map to `removed` too: the same change gets the same identity whatever the envelope.
 */
export function s3Operation(eventName: string): S3Operation {
  const n = eventName.replace(/\s+/g, "").toLowerCase().replace(/^s3:/, "");
  if (n.startsWith("objectcreated")) return "created";
  if (
    n.startsWith("objectremoved") ||
    n.startsWith("objectdeleted") ||
    n.startsWith("lifecycleexpiration:delete")
  ) {
    return "removed";
  }
  return "other";
}
