import { describeText, describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { SqsDelivery } from "../core/event.js";
import { describe, isObject, join, own, requireObject, requireString } from "./fields.js";

/**
 * Delivery metadata of one SQS record. `messageId` (the partial batch failure identifier) and
 * `receiptHandle` (needed to extend visibility) are required; the receive count must be a positive
 * integer when present (Lambda always sends it; hand-written events may not, which reads as 1).
 */
export function sqsMetadata(record: unknown, path: string): SqsDelivery {
  const r = requireObject(record, path);
  const attributesPath = join(path, "attributes");
  const attributes = stringMap(r.attributes, attributesPath);
  const count = own(attributes, "ApproximateReceiveCount");
  const receiveCount = count === undefined ? 1 : Number(count);
  // Digits only (no "1e3", no sign), and small enough that Number() is exact.
  if (count !== undefined && !(/^[1-9]\d*$/.test(count) && Number.isSafeInteger(receiveCount))) {
    throw new MalformedEventError(
      `expected a positive integer up to 2^53-1, got ${describeValue(count)}`,
      join(attributesPath, "ApproximateReceiveCount"),
    );
  }
  const sqs: SqsDelivery = {
    messageId: requireString(r, "messageId", path),
    receiptHandle: requireString(r, "receiptHandle", path),
    receiveCount,
    eventSourceArn: typeof r.eventSourceARN === "string" ? r.eventSourceARN : "",
    attributes,
    messageAttributes: messageAttributes(r.messageAttributes, join(path, "messageAttributes")),
  };
  const group = own(attributes, "MessageGroupId");
  if (group !== undefined) sqs.messageGroupId = group;
  return sqs;
}

/** System attributes: all strings in the Lambda event; anything else is dropped rather than guessed at. */
function stringMap(value: unknown, path: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(requireObject(value, path))) {
    if (typeof v === "string") setOwn(out, name, v);
  }
  return out;
}

/** Message attributes as name → stringValue (String and Number types); Binary attributes are skipped. */
function messageAttributes(value: unknown, path: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string> = {};
  for (const [name, attribute] of Object.entries(requireObject(value, path))) {
    if (!isObject(attribute)) {
      // The name is untrusted: escaped and capped like any echoed value.
      throw new MalformedEventError(
        `expected an object, got ${describe(attribute)}`,
        join(path, describeText(name)),
      );
    }
    if (typeof attribute.stringValue === "string") setOwn(out, name, attribute.stringValue);
  }
  return out;
}

/** `out[name] = value` would set the prototype for `__proto__`; this keeps every name an own property. */
function setOwn(out: Record<string, string>, name: string, value: string): void {
  Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
}
