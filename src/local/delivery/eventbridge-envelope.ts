import { randomUUID } from "node:crypto";
import type { EventBridgeEvent, S3EventRecord } from "aws-lambda";
import { decodeS3NotificationKey } from "../../sources/key-encoding.js";
import { LOCAL_ACCOUNT_ID } from "../aws-local.js";

/** An S3 object event as EventBridge delivers it. */
export type S3EventBridgeEvent = EventBridgeEvent<string, Record<string, unknown>>;

const REASONS: Record<string, string> = {
  "ObjectCreated:Put": "PutObject",
  "ObjectCreated:Post": "POSTObject",
  "ObjectCreated:Copy": "CopyObject",
  "ObjectCreated:CompleteMultipartUpload": "CompleteMultipartUpload",
  "ObjectRemoved:Delete": "DeleteObject",
};

/**
 * The event S3 sends to EventBridge for the same change as `record`: detail-type `Object Created` or
 * `Object Deleted`, the key as stored (EventBridge does not URL-encode it), the same sequencer and request
 * id. Each call gets a new event id, as a new event would; a duplicate delivery reuses the object.
 */
export function toEventBridgeEvent(record: S3EventRecord, account = LOCAL_ACCOUNT_ID): S3EventBridgeEvent {
  const created = record.eventName.startsWith("ObjectCreated");
  const o = record.s3.object as S3EventRecord["s3"]["object"] & { versionId?: string };
  const object: Record<string, unknown> = {
    key: decodeS3NotificationKey(o.key, "s3.object.key"),
    sequencer: o.sequencer,
  };
  if (created) {
    object.size = o.size;
    if (o.eTag) object.etag = o.eTag;
  }
  if (o.versionId) object["version-id"] = o.versionId;
  const detail: Record<string, unknown> = {
    version: "0",
    bucket: { name: record.s3.bucket.name },
    object,
    "request-id": record.responseElements["x-amz-request-id"],
    requester: account,
    "source-ip-address": record.requestParameters.sourceIPAddress,
    reason: REASONS[record.eventName] ?? record.eventName,
  };
  if (!created) detail["deletion-type"] = "Permanently Deleted";
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": created ? "Object Created" : "Object Deleted",
    source: "aws.s3",
    account,
    time: record.eventTime.replace(/\.\d{3}Z$/, "Z"),
    region: record.awsRegion,
    resources: [record.s3.bucket.arn],
    detail,
  };
}
