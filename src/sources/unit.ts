import { MalformedEventError } from "../core/errors.js";
import type { Delivery, NormalizedEvent } from "../core/event.js";
import { index, own } from "./fields.js";
import type { DeliveryUnit, ResolvedParseOptions } from "./types.js";

/**
 * Chooses the correlation id and assembles the unit. Order: the user-named SQS message attribute,
 * then the envelope's own id (S3 request id, EventBridge id), then the SQS message id, then the
 * EventBridge id, then the placeholder already in `delivery` (the record's path).
 */
export function finishUnit(
  delivery: Delivery,
  events: NormalizedEvent[],
  error: MalformedEventError | undefined,
  preferredCorrelationId: string | undefined,
  options: ResolvedParseOptions,
): DeliveryUnit {
  const attribute = options.correlationAttribute;
  const attributes = delivery.sqs?.messageAttributes;
  const fromAttribute = attribute === undefined || !attributes ? undefined : own(attributes, attribute);
  delivery.correlationId =
    nonEmpty(fromAttribute) ??
    nonEmpty(preferredCorrelationId) ??
    delivery.sqs?.messageId ??
    delivery.eventBridge?.id ??
    delivery.correlationId;
  const unit: DeliveryUnit = { delivery, events };
  if (error) unit.error = error;
  return unit;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.length === 0 ? undefined : value;
}

/** What a parser found in one unit's input: its events, the error of a part of it, the id it names. */
export interface ParsedUnit {
  events: NormalizedEvent[];
  error?: MalformedEventError | undefined;
  correlationId?: string | undefined;
}

/**
 * The unit of `delivery`: what `parse` finds, or, when it finds the input malformed (a `MalformedEventError`), a unit
 * carrying that error with the id `malformedCorrelationId` can still read. Never throws for bad input: one bad record
 * cannot fail its batch.
 */
export function unitOf(
  delivery: Delivery,
  options: ResolvedParseOptions,
  parse: () => ParsedUnit,
  malformedCorrelationId?: () => string | undefined,
): DeliveryUnit {
  try {
    const found = parse();
    return finishUnit(delivery, found.events, found.error, found.correlationId, options);
  } catch (e) {
    if (!(e instanceof MalformedEventError)) throw e;
    return finishUnit(delivery, [], e, malformedCorrelationId?.(), options);
  }
}

/** The delivery of a batch's record `recordIndex` and its path (`Records[i]`), its correlation id until one is read. */
export function recordDelivery(
  envelope: Delivery["envelope"],
  recordIndex: number,
): { path: string; delivery: Delivery } {
  const path = index("Records", recordIndex);
  return { path, delivery: { envelope, correlationId: path, recordIndex } };
}
