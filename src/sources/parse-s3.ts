import type { Delivery } from "../core/event.js";
import { eventBridgeS3Events, isS3EventBridgeEvent } from "./eventbridge.js";
import { isObject, type JsonObject } from "./fields.js";
import { parseS3Record, parseS3TestEvent, requestIdOf } from "./s3-notification.js";
import type { DeliveryUnit, ResolvedParseOptions } from "./types.js";
import { recordDelivery, unitOf } from "./unit.js";

/**
 * Direct S3 invocations, record by record, and S3 events EventBridge invokes with: what `parseInvocation` does for
 * them, in a file of its own so that `s3Handler` bundles without the other sources' parsers.
 */

/** One record of a direct S3 notification: a unit with its event, or with the error that made it malformed. */
export function directS3Record(
  record: unknown,
  recordIndex: number,
  options: ResolvedParseOptions,
): DeliveryUnit {
  const { path, delivery } = recordDelivery("s3", recordIndex);
  return unitOf(
    delivery,
    options,
    () => {
      const event = parseS3Record(record, path);
      return { events: [event], correlationId: event.requestId };
    },
    () => lenientRequestId(record, path),
  );
}

/** A direct `s3:TestEvent`: one unit. */
export function directTestEvent(input: JsonObject, options: ResolvedParseOptions): DeliveryUnit {
  const delivery: Delivery = { envelope: "s3", correlationId: "s3:TestEvent", recordIndex: 0 };
  return unitOf(delivery, options, () => {
    const event = parseS3TestEvent(input, "");
    return { events: [event], correlationId: event.requestId };
  });
}

/**
 * An S3 event delivered directly by EventBridge (source `aws.s3`): one unit, as `parseInvocation` makes it; undefined
 * for an EventBridge event from another source (an application message: not an S3 function's).
 */
export function directEventBridgeS3(
  input: JsonObject,
  options: ResolvedParseOptions,
): DeliveryUnit | undefined {
  if (!isS3EventBridgeEvent(input)) return undefined;
  const id = typeof input.id === "string" ? input.id : "";
  const delivery: Delivery = { envelope: "eventbridge", correlationId: id || "eventbridge", recordIndex: 0 };
  return unitOf(delivery, options, () => eventBridgeS3Events(input, "", delivery));
}

/** The request id of a record that failed validation, if it can still be read: it helps find the request. */
function lenientRequestId(record: unknown, path: string): string | undefined {
  if (!isObject(record)) return undefined;
  try {
    return requestIdOf(record, path);
  } catch {
    return undefined;
  }
}
