import type { MalformedEventError } from "../core/errors.js";
import type { Delivery, NormalizedEvent } from "../core/event.js";
import { own } from "./fields.js";
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
