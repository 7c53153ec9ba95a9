import { MalformedEventError } from "../core/errors.js";
import type { SqsDelivery } from "../core/event.js";
import { describe, isObject, join, requireObject, requireString } from "./fields.js";

/**
 * Delivery metadata of one SQS record. `messageId` (the partial batch failure identifier) and
 * `receiptHandle` (needed to extend visibility) are required; the receive count must be a positive
 * integer when present (Lambda always sends it; hand-written events may not, which reads as 1).
 */
export function sqsMetadata(record: unknown, path: string): SqsDelivery {
  const r = requireObject(record, path);
  const attributesPath = join(path, "attributes");
  const attributes = stringMap(r.attributes, attributesPath);
  const count = attributes.ApproximateReceiveCount;
  if (count !== undefined && !/^[1-9]\d*$/.test(count)) {
    throw new MalformedEventError(
      `expected a positive integer, got ${JSON.stringify(count)}`,
      join(attributesPath, "ApproximateReceiveCount"),
    );
  }
  const sqs: SqsDelivery = {
    messageId: requireString(r, "messageId", path),
    receiptHandle: requireString(r, "receiptHandle", path),
    receiveCount: count === undefined ? 1 : Number(count),
    eventSourceArn: typeof r.eventSourceARN === "string" ? r.eventSourceARN : "",
    attributes,
    messageAttributes: messageAttributes(r.messageAttributes, join(path, "messageAttributes")),
  };
  if (attributes.MessageGroupId !== undefined) sqs.messageGroupId = attributes.MessageGroupId;
  return sqs;
}

/** System attributes: all strings in the Lambda event; anything else is dropped rather than guessed at. */
function stringMap(value: unknown, path: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(requireObject(value, path))) {
    if (typeof v === "string") out[name] = v;
  }
  return out;
}

/** Message attributes as name → stringValue (String and Number types); Binary attributes are skipped. */
function messageAttributes(value: unknown, path: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string> = {};
  for (const [name, attribute] of Object.entries(requireObject(value, path))) {
    if (!isObject(attribute)) {
      throw new MalformedEventError(`expected an object, got ${describe(attribute)}`, join(path, name));
    }
    if (typeof attribute.stringValue === "string") out[name] = attribute.stringValue;
  }
  return out;
}
