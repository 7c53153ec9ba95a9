import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { Delivery, MessageEvent } from "../core/event.js";
import type { GuardedEvent } from "../core/guard.js";
import { toPosition } from "../core/position.js";
import type { DerivableEvent, ResolvedOptions, StreamRecordEvent } from "./options.js";

/** What deriving reads of the wrapper's options. */
type KeyOptions = Pick<ResolvedOptions, "subject" | "identity" | "position">;

/**
 * The guard keys of application messages and stream records, from the wrapper's `subject`, `identity` and `position`
 * or their defaults (docs/lambda.md, docs/sources.md): in a file of its own, so that `s3Handler`, whose events carry
 * their keys, bundles without it (its trigger kit has no `derive`).
 */
export type DeriveKeys = (o: KeyOptions, event: DerivableEvent, delivery: Delivery) => GuardedEvent;

/** A message's or a stream record's keys; a derivation that throws or gives no key makes the delivery malformed. */
export const deriveKeys: DeriveKeys = (o, event, delivery) =>
  event.kind === "message" ? deriveMessage(o, event, delivery) : deriveStream(o, event, delivery);

function deriveMessage(o: KeyOptions, event: MessageEvent, delivery: Delivery): GuardedEvent {
  const fallback = delivery.eventBridge?.id ?? delivery.sns?.messageId ?? event.messageId;
  const subject = o.subject ? o.subject(event, delivery) : fallback;
  requireKey("subject", subject);
  const raw = o.position?.(event, delivery);
  const position = raw === undefined ? undefined : toPosition(raw);
  const identity = o.identity
    ? o.identity(event, delivery)
    : position !== undefined
      ? `p:${position}`
      : fallback;
  requireKey("identity", identity);
  return position === undefined ? { subject, identity } : { subject, identity, position };
}

/**
 * A stream record's keys (docs/sources.md, "Streams: guard keys"): subject the partition key (Kinesis) or the item
 * (DynamoDB); position the sequence number, so a redelivered record is a duplicate and an older change after a newer
 * one is stale; identity from the sequence number. A user's `position` makes the identity `p:<position>` (a producer
 * retry of the same version is a duplicate). A user's `identity` without a `position` makes the records dedupe-only:
 * one state item per identity, so a producer retry (same identity, a new and higher sequence number) is a duplicate;
 * with the sequence number as position it would be newer than the committed one, and run again.
 */
function deriveStream(o: KeyOptions, event: StreamRecordEvent, delivery: Delivery): GuardedEvent {
  const subject = o.subject
    ? o.subject(event, delivery)
    : event.kind === "kinesis"
      ? event.partitionKey
      : event.item;
  requireKey("subject", subject);
  const raw = o.position?.(event, delivery);
  const userPosition = raw === undefined ? undefined : toPosition(raw);
  const position = (o.position ?? o.identity) === undefined ? event.position : userPosition;
  const identity = o.identity
    ? o.identity(event, delivery)
    : userPosition !== undefined
      ? `p:${userPosition}`
      : `n:${event.sequenceNumber}`;
  requireKey("identity", identity);
  return position === undefined ? { subject, identity } : { subject, identity, position };
}

function requireKey(name: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    throw new MalformedEventError(
      `${name} derivation returned ${describeValue(value)}, not a non-empty string`,
      "",
    );
  }
}
