import { describeError, describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { Delivery, EnvelopeKind, S3TestEvent } from "../core/event.js";
import type { GuardedEvent } from "../core/guard.js";
import type { DeliveryUnit } from "../sources/types.js";
import type { DeriveKeys } from "./derive-keys.js";
import { groupLanes, type Lane } from "./lanes.js";
import type { AnyHandledEvent, ResolvedOptions } from "./options.js";

/**
 * Planning an invocation, before anything runs: each parsed delivery unit's events with their guard keys derived
 * (subject, identity, position, fingerprint: a throw there makes the delivery malformed), its SQS order (message id,
 * FIFO group, queue), and the lanes the deliveries run in. Pure: no observer, no store; invocation.ts runs the plan.
 */

/** One event of a delivery: an `s3:TestEvent` (acknowledged, counted), or an event and its guard keys. */
export type Item =
  | { kind: "test"; event: S3TestEvent }
  | { kind: "event"; event: AnyHandledEvent; guarded: GuardedEvent };

/** One delivery unit, planned. */
export interface Plan {
  unit: DeliveryUnit;
  index: number;
  error?: MalformedEventError;
  items: Item[];
  /** SQS: the message id, group and queue ARN, from its metadata or, when that is broken, as parsed leniently. */
  messageId?: string;
  group?: string;
  arn?: string;
}

/** How an invocation's deliveries are answered: an SQS batch, a stream batch (one shard), or a direct invoke. */
export type BatchKind = "sqs" | "stream" | "direct";

export const isStreamEnvelope = (e: EnvelopeKind) => e === "kinesis" || e === "dynamodb-streams";
export const isSqsEnvelope = (e: EnvelopeKind) => e !== "s3" && e !== "eventbridge" && !isStreamEnvelope(e);

/** The batch kind of parsed units (Lambda never mixes sources in one invocation; a mix answers as a direct invoke). */
export function batchKindOf(units: readonly DeliveryUnit[]): BatchKind {
  if (units.every((u) => isSqsEnvelope(u.delivery.envelope))) return "sqs";
  if (units.every((u) => isStreamEnvelope(u.delivery.envelope))) return "stream";
  return "direct";
}

/** What planning reads of the wrapper's options. */
type PlanOptions = Pick<
  ResolvedOptions,
  "orderS3Events" | "payloadFingerprint" | "subject" | "identity" | "position"
>;

/** The unit's events with their guard keys, and its SQS order. */
export function planUnit(
  o: PlanOptions,
  unit: DeliveryUnit,
  index: number,
  derive: DeriveKeys | undefined,
): Plan {
  const sqs = unit.delivery.sqs;
  const order: Pick<Plan, "messageId" | "group" | "arn"> = sqs
    ? { messageId: sqs.messageId, group: sqs.messageGroupId, arn: sqs.eventSourceArn || undefined }
    : {
        messageId: unit.recovered?.messageId,
        group: unit.recovered?.messageGroupId,
        arn: unit.recovered?.eventSourceArn,
      };
  if (unit.error) return { unit, index, error: unit.error, items: [], ...order };
  try {
    return {
      unit,
      index,
      items: unit.events.map((event) => itemOf(o, event, unit.delivery, derive)),
      ...order,
    };
  } catch (error) {
    const malformed =
      error instanceof MalformedEventError
        ? error
        : new MalformedEventError(`cannot derive the message's keys: ${describeError(error)}`, "", {
            cause: error,
          });
    return { unit, index, error: malformed, items: [], ...order };
  }
}

function itemOf(
  o: PlanOptions,
  event: DeliveryUnit["events"][number],
  delivery: Delivery,
  derive: DeriveKeys | undefined,
): Item {
  if (event.kind === "s3-test") return { kind: "test", event };
  if (event.kind === "s3") {
    const guarded: GuardedEvent = { subject: event.subject, identity: event.identity };
    // Unordered S3 events keep their identity (sequencer + operation) but no position: dedupe only.
    if (event.position !== undefined && o.orderS3Events) guarded.position = event.position;
    return { kind: "event", event, guarded: withFingerprint(o, event, guarded) };
  }
  // Only the kits whose parsers bring messages and stream records carry their derivation (s3Handler's does not).
  if (!derive) throw new MalformedEventError(`no key derivation for a ${event.kind} event`, "");
  return { kind: "event", event, guarded: withFingerprint(o, event, derive(o, event, delivery)) };
}

function withFingerprint(o: PlanOptions, event: AnyHandledEvent, guarded: GuardedEvent): GuardedEvent {
  const fingerprint = o.payloadFingerprint?.(event);
  if (fingerprint === undefined) return guarded;
  if (typeof fingerprint !== "string" || fingerprint.length === 0) {
    throw new MalformedEventError(`payloadFingerprint gave ${describeValue(fingerprint)}, not a string`, "");
  }
  return { ...guarded, fingerprint };
}

function laneKey(plan: Plan, fifo: boolean): string {
  if (fifo) return plan.group === undefined ? `#${plan.index}` : `g:${plan.group}`;
  const first = plan.items.find((i) => i.kind === "event");
  return first?.kind === "event" ? `s:${first.guarded.subject}` : `#${plan.index}`;
}

/**
 * Lanes by subject, or on a FIFO batch by message group; on a stream batch by subject, stopping at a failure. A FIFO
 * record whose group cannot be read (its metadata is
 * broken) fails, and cannot be placed in its group's order: every FIFO record after it in the batch is `blocked`
 * (deferred, never run), since any of them may be of its group (docs/lambda.md: after a failure, the rest of
 * the group is not run).
 */
export function planLanes<P extends Plan>(
  plans: P[],
  batch: BatchKind,
): { lanes: Lane<P>[]; blocked: { plan: P; reason: string }[] } {
  // A stream batch is one shard: a subject's records in order, and none after its first failure (Lambda redelivers
  // the shard from the failed record; a later record run now would overtake it).
  if (batch === "stream") return { lanes: groupLanes(plans, (p) => laneKey(p, false), true), blocked: [] };
  const fifo = batch === "sqs" && plans.some((p) => p.group !== undefined || isFifoArn(p.arn));
  if (!fifo) return { lanes: groupLanes(plans, (p) => laneKey(p, false), false), blocked: [] };
  // Its queue cannot be read either: the batch is FIFO, and Lambda batches come from one queue.
  const mayBeFifo = (p: Plan) => p.group !== undefined || p.arn === undefined || isFifoArn(p.arn);
  const barrier = plans.find((p) => !p.unit.delivery.sqs && p.group === undefined && mayBeFifo(p));
  if (!barrier) return { lanes: groupLanes(plans, (p) => laneKey(p, true), true), blocked: [] };
  const name = barrier.messageId ?? `record ${barrier.index}`;
  const reason = `${name}, earlier in this FIFO batch, failed with no readable message group (it may be this one's)`;
  const after = (p: Plan) => p.index > barrier.index && mayBeFifo(p);
  return {
    lanes: groupLanes(
      plans.filter((p) => !after(p)),
      (p) => laneKey(p, true),
      true,
    ),
    blocked: plans.filter(after).map((plan) => ({ plan, reason })),
  };
}

function isFifoArn(arn: string | undefined): boolean {
  return arn?.endsWith(".fifo") ?? false;
}
