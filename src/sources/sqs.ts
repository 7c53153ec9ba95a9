import { MalformedEventError } from "../core/errors.js";
import { describe, isObject, join } from "./fields.js";
import { parseSqsBody } from "./payload.js";
import { sqsMetadata } from "./sqs-metadata.js";
import type { DeliveryUnit, RecoveredSqsFields, ResolvedParseOptions } from "./types.js";
import { recordDelivery, unitOf } from "./unit.js";

/**
 * One SQS record → one delivery unit (the unit of partial batch failure). Never throws for bad input:
 * a malformed record or body becomes a unit with `error`, so one bad message cannot fail its batch.
 */
export function parseSqsRecord(
  record: unknown,
  recordIndex: number,
  options: ResolvedParseOptions,
): DeliveryUnit {
  const { path, delivery } = recordDelivery("sqs", recordIndex);
  const unit = unitOf(delivery, options, () => {
    const sqs = sqsMetadata(record, path);
    delivery.sqs = sqs;
    const body = isObject(record) ? record.body : undefined;
    if (typeof body !== "string") {
      throw new MalformedEventError(`expected a string, got ${describe(body)}`, join(path, "body"));
    }
    return parseSqsBody(body, join(path, "body"), delivery, sqs.messageId, options);
  });
  // Metadata that failed validation (no `delivery.sqs`): what can still be read of it.
  if (!delivery.sqs) unit.recovered = recoveredFields(record);
  return unit;
}

/** A record with broken metadata: its id, group and queue, read leniently (a record that lost its group would leave its group's order). */
function recoveredFields(record: unknown): RecoveredSqsFields {
  const out: RecoveredSqsFields = {};
  if (!isObject(record)) return out;
  const messageId = ownString(record, "messageId");
  const group = ownString(record.attributes, "MessageGroupId");
  const arn = ownString(record, "eventSourceARN");
  if (messageId !== undefined) out.messageId = messageId;
  if (group !== undefined) out.messageGroupId = group;
  if (arn !== undefined) out.eventSourceArn = arn;
  return out;
}

function ownString(value: unknown, name: string): string | undefined {
  if (!isObject(value) || !Object.hasOwn(value, name)) return undefined;
  const field = value[name];
  return typeof field === "string" && field.length > 0 ? field : undefined;
}
