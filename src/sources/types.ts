import type { MalformedEventError } from "../core/errors.js";
import type { Delivery, NormalizedEvent } from "../core/event.js";

/**
 * One thing the source can redeliver or fail on its own: an SQS message (the unit of partial batch
 * failure), a direct S3 record, or an EventBridge event.
 *
 * A unit with `error` is malformed as a whole (route it: acknowledge-and-count or dead-letter).
 * `events` then holds whatever did parse (e.g. the good records of a body carrying several), for
 * logging; adapters must not treat them as a clean delivery.
 */
export interface DeliveryUnit {
  delivery: Delivery;
  events: NormalizedEvent[];
  error?: MalformedEventError;
  /**
   * An SQS record whose metadata failed validation (no `delivery.sqs`): what could still be read of it, leniently,
   * while parsing: its message id (for the batch response) and its FIFO group and queue (for its group's order).
   */
  recovered?: RecoveredSqsFields;
}

/** The fields of an SQS record read leniently when its metadata is broken; each only when a non-empty string. */
export interface RecoveredSqsFields {
  messageId?: string;
  messageGroupId?: string;
  eventSourceArn?: string;
}

/** The options of `parseInvocation`; unknown keys throw `OptionsError`. */
export interface ParseOptions {
  /**
   * What an SQS body (or EventBridge event) that is not an S3 notification becomes:
   * `"reject"` (default) a MalformedEventError unit, `"accept"` a `MessageEvent`.
   */
  messages?: "accept" | "reject";
  /** SQS message attribute (its stringValue) used as correlation id when present. */
  correlationAttribute?: string;
}

/** Options after validation and defaults. */
export interface ResolvedParseOptions {
  messages: "accept" | "reject";
  correlationAttribute?: string;
}
