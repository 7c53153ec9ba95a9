import type { Context, SQSBatchResponse } from "aws-lambda";
import { describeError } from "../core/describe-value.js";
import { InvalidPositionError, MalformedEventError, SubjectTooLongError } from "../core/errors.js";
import type { EnvelopeKind } from "../core/event.js";
import type { GuardContext, GuardOutcome, RunOptions } from "../core/guard.js";
import { type DeliveryStatus, isAcknowledged } from "../core/outcomes.js";
import { comparePositions, positionFromSequenceNumber } from "../core/position.js";
import { type DeliveryObserver, type InvocationObserver, Observer } from "../observe/observer.js";
import type { DeliveryUnit } from "../sources/types.js";
import { type Deadline, lambdaDeadline } from "./deadline.js";
import { DeliveryFailedError } from "./errors.js";
import { runLanes } from "./lanes.js";
import {
  type AnyHandledEvent,
  type ApplyEventHandler,
  type DeliveryContext,
  defaultFingerprint,
  type EventHandler,
  type ResolvedOptions,
  type WrapperMode,
} from "./options.js";
import { type BatchKind, batchKindOf, type Item, type Plan, planLanes, planUnit } from "./plan.js";
import type { HeartbeatStarter, TriggerKit } from "./trigger-kit.js";
import { TRIGGERS, type Trigger, wrongTrigger } from "./triggers.js";
import type { HeartbeatRun } from "./visibility-heartbeat-options.js";

/**
 * Running an invocation, one path from the Lambda event to each commit (docs/architecture.md draws it): parse once
 * (src/sources), plan (plan.ts: keys, SQS order, lanes), run the lanes, each delivery's events one after another
 * through the one guard, and answer from the deliveries' reports. Each delivery carries its observer and its report
 * (`UnitInProgress`); the report is the one record of how it ended, read by the answer (batch item failures or a
 * throw).
 */

/** How a delivery (or one event in it) ended: see src/core/outcomes.ts. */
export type { DeliveryStatus } from "../core/outcomes.js";

/** How one event of a delivery ended. */
export interface EventReport<R = unknown> {
  status: DeliveryStatus;
  subject?: string;
  /** The handler's result (processed) or the stored one (duplicate). */
  result?: R;
}

/** How one delivery unit (an SQS message, a direct S3 record, an EventBridge event) ended. */
export interface DeliveryReport<R = unknown> {
  correlationId: string;
  recordIndex: number;
  envelope: EnvelopeKind;
  messageId?: string;
  /** Kinesis and DynamoDB Streams: the record's sequence number (the batch item failure identifier). */
  sequenceNumber?: string;
  ok: boolean;
  events: EventReport<R>[];
}

/** What a direct (S3, EventBridge) invocation returns: Lambda ignores it for asynchronous invokes. */
export interface InvocationReport<R = unknown> {
  deliveries: DeliveryReport<R>[];
}

/**
 * A stream batch's answer (Kinesis, DynamoDB Streams; `KinesisStreamBatchResponse` and `DynamoDBBatchResponse` in
 * @types/aws-lambda): at most one item, the sequence number Lambda resumes the shard from.
 */
export interface StreamBatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}

/** An invocation's answer: an SQS or stream batch response with the report, or the report of a direct invoke. */
export type InvocationResult<R> =
  | { kind: "sqs"; response: SQSBatchResponse; report: InvocationReport<R> }
  | { kind: "stream"; response: StreamBatchResponse; report: InvocationReport<R> }
  | { kind: "direct"; report: InvocationReport<R> };

export type { Trigger } from "./triggers.js";

/**
 * The user's handler of either mode, typed for the events of its wrapper's trigger (`never` here takes any of them):
 * the runner's mode says which mode it is, and the trigger check at parse that only its events reach it.
 */
export type AnyEventHandler<R> = EventHandler<R, never> | ApplyEventHandler<R, never>;

/** Acknowledged as the outcome table says (src/core/outcomes.ts); `malformed` is decided per source below. */
const acknowledged = isAcknowledged;

/** The user's handler bound to its mode: how each event reaches the guard. */
type Bound<R> =
  | { mode: "run"; handler: EventHandler<R, AnyHandledEvent> }
  | { mode: "apply"; handler: ApplyEventHandler<R, AnyHandledEvent> };

/** One invocation in progress: what every delivery of it shares. */
interface Call<R> {
  bound: Bound<R>;
  inv: InvocationObserver;
  deadline: Deadline;
  context: Context | undefined;
  sqs: boolean;
  batch: BatchKind;
}

/** One delivery unit on its way: its plan, its observer and its report (filled as its events end). */
interface UnitInProgress<R> extends Plan {
  obs: DeliveryObserver;
  report: DeliveryReport<R>;
}

/** Runs invocations for one wrapper: options resolved once; guard, observer and heartbeat reused across invocations. */
export class InvocationRunner {
  readonly #o: ResolvedOptions;
  readonly #what: string;
  readonly #observer: Observer;
  readonly #kit: TriggerKit;
  readonly #heartbeat: HeartbeatStarter | undefined;

  /** How each event reaches the guard: `guard.run` or `guard.apply`. */
  get mode(): WrapperMode {
    return this.#o.mode;
  }

  /** `kit`: the wrapper's trigger (trigger-kit.ts), what it parses and whether it keeps SQS messages invisible. */
  constructor(what: string, resolved: ResolvedOptions, kit: TriggerKit) {
    this.#what = what;
    this.#o = resolved;
    this.#kit = kit;
    this.#observer = new Observer({
      logger: resolved.logger,
      metrics: resolved.metrics,
      pipeline: resolved.pipeline,
    });
    const hb = resolved.visibilityHeartbeat;
    this.#heartbeat = hb ? kit.heartbeat?.(hb, resolved.sqsClient) : undefined;
  }

  /**
   * Parse → plan → run every delivery (lanes, heartbeat, guard) → answer: batch item failures, or throw for a retry.
   * `handler` is of the runner's mode (`HandlerOf<mode>`: the wrappers' signatures tie the two).
   */
  async run<R>(
    handler: AnyEventHandler<R>,
    input: unknown,
    context: Context | undefined,
    trigger: Trigger,
  ): Promise<InvocationResult<R>> {
    const inv = this.#observer.invocation({
      functionName: context?.functionName,
      requestId: context?.awsRequestId,
    });
    const units = this.#parse(input, trigger, inv);
    const batch = batchKindOf(units);
    const sqs = batch === "sqs";
    const deliveries = units.map((unit, index) =>
      delivery<R>(planUnit(this.#o, unit, index, this.#kit.derive), inv),
    );
    const deadline = lambdaDeadline(context, this.#o.deadlineMarginMs);
    const call: Call<R> = { bound: bind(this.#o.mode, handler), inv, deadline, context, sqs, batch };
    let heartbeat: HeartbeatRun | undefined;
    try {
      heartbeat = sqs ? this.#startHeartbeat(deliveries, inv) : undefined;
      const { lanes, blocked } = planLanes(deliveries, batch);
      for (const b of blocked) defer(b.plan, heartbeat, `not processed: ${b.reason}`);
      if (batch === "stream" && this.#o.newestPerSubject) {
        // Each lane whole, newest first: one item per lane, so the lane decides for its older records itself.
        const newest = lanes.map((lane) => ({ items: [newestFirst(lane.items)], stopOnFailure: false }));
        await runLanes(
          newest,
          this.#o.concurrency,
          (group) => this.#deliverNewest(call, group),
          () => {},
        );
      } else {
        await runLanes(
          lanes,
          this.#o.concurrency,
          (d) => this.#deliver(call, d, heartbeat),
          (d) => defer(d, heartbeat, `not processed: ${skipReason(d, batch)}`),
        );
      }
    } finally {
      await heartbeat?.stop();
      deadline.dispose();
      flush(inv);
    }
    return this.#respond(deliveries, inv, batch);
  }

  /** The invocation's deliveries; an invocation the wrapper cannot take is logged, counted and thrown. */
  #parse(input: unknown, trigger: Trigger, inv: InvocationObserver): DeliveryUnit[] {
    try {
      const units = this.#kit.parse(input, this.#o.parse, this.#what);
      const got = triggerOf(units);
      if (trigger !== "any" && trigger !== got) throw wrongTrigger(this.#what, TRIGGERS[got]);
      const o = this.#o;
      const derives =
        o.subject ??
        o.identity ??
        o.position ??
        (o.payloadFingerprint !== defaultFingerprint ? o.payloadFingerprint : undefined);
      if (!o.streams && (got === "kinesis" || got === "dynamodb-streams") && derives !== undefined) {
        // Typed for application messages, they would get stream records: a configuration error, like a wrong trigger.
        throw new MalformedEventError(
          `${this.#what} got ${TRIGGERS[got].what}, and its subject/identity/position/payloadFingerprint functions ` +
            `take application messages; use ${TRIGGERS[got].wrapper}, whose functions take the stream's records`,
          "",
        );
      }
      return units;
    } catch (error) {
      if (error instanceof MalformedEventError) inv.unknownInvocation(error);
      flush(inv);
      throw error;
    }
  }

  /**
   * SQS: the failed records as batch item failures. Streams: the first failed record, where Lambda resumes the shard.
   * Direct invokes: throw when any record failed (Lambda retries).
   */
  #respond<R>(
    deliveries: UnitInProgress<R>[],
    inv: InvocationObserver,
    batch: BatchKind,
  ): InvocationResult<R> {
    const report: InvocationReport<R> = { deliveries: deliveries.map((d) => d.report) };
    const failed = deliveries.filter((d) => !d.report.ok);
    if (batch === "stream")
      return { kind: "stream", response: { batchItemFailures: checkpoint(failed) }, report };
    if (batch === "sqs") {
      const batchItemFailures: SQSBatchResponse["batchItemFailures"] = [];
      for (const d of failed) {
        if (d.messageId !== undefined) batchItemFailures.push({ itemIdentifier: d.messageId });
        else {
          // Only hand-made events lack a messageId; an empty identifier would fail the whole batch.
          inv.log(
            "error",
            `delivery ${d.report.correlationId} failed but has no messageId to report: acknowledged`,
            {
              recordIndex: d.report.recordIndex,
            },
          );
        }
      }
      return { kind: "sqs", response: { batchItemFailures }, report };
    }
    if (failed.length > 0) {
      throw new DeliveryFailedError(
        failed.map(({ report: r }) => ({
          correlationId: r.correlationId,
          recordIndex: r.recordIndex,
          status: r.events.find((e) => !acknowledged(e.status))?.status ?? "failed",
        })),
        deliveries.length,
      );
    }
    return { kind: "direct", report };
  }

  #startHeartbeat<R>(deliveries: UnitInProgress<R>[], inv: InvocationObserver): HeartbeatRun | undefined {
    if (!this.#heartbeat) return undefined;
    const observers = new Map<string, DeliveryObserver>();
    const messages = deliveries.flatMap(({ unit, obs }) => {
      const s = unit.delivery.sqs;
      if (!s) return [];
      observers.set(s.messageId, obs);
      return [{ messageId: s.messageId, receiptHandle: s.receiptHandle, eventSourceArn: s.eventSourceArn }];
    });
    // The heartbeat's problems are logged with the message's correlation id (or the request id).
    return this.#heartbeat.start(messages, (p) => {
      const obs = p.message ? observers.get(p.message.messageId) : undefined;
      const text =
        p.kind === "refused"
          ? `visibility extension refused for ${p.message?.messageId} (${p.code ?? "error"}): no longer extended; ` +
            "it may be redelivered while it runs (the guard still keeps it from running twice)"
          : `visibility extension request failed (${p.code ?? "error"}): retried on the next interval`;
      const fields = { error: p.error, code: p.code };
      if (obs) obs.log("warn", text, fields);
      else inv.log("warn", text, fields);
    });
  }

  /**
   * One delivery: its events one after another through the guard, each outcome observed and reported where it
   * ends; the first one not acknowledged ends the delivery (the rest is redelivered with it, and what did succeed
   * comes back as duplicates). Returns whether the delivery succeeded (a FIFO lane stops at a failure).
   */
  async #deliver<R>(
    call: Call<R>,
    d: UnitInProgress<R>,
    heartbeat: HeartbeatRun | undefined,
  ): Promise<boolean> {
    try {
      if (!this.#start(call, d)) return d.report.ok;
      for (const item of d.items) {
        if (item.kind === "test") {
          d.obs.testEvent(item.event.bucket);
          d.report.events.push({ status: "test-event" });
          continue;
        }
        const started = performance.now();
        let outcome: GuardOutcome<R> | { thrown: unknown };
        try {
          outcome = await this.#step(call, d, item);
        } catch (thrown) {
          outcome = { thrown };
        }
        const status = this.#ended(call, d, item, outcome, performance.now() - started);
        if (status === "malformed") return end(d, !call.sqs);
        if (!acknowledged(status)) return end(d, false);
      }
      return end(d, true);
    } finally {
      // A failed message stops being extended, so it comes back after its visibility timeout. A succeeded one is
      // deleted only when the whole batch returns: it stays extended until then, or it would be redelivered.
      const id = d.unit.delivery.sqs?.messageId;
      if (!d.report.ok && id !== undefined) heartbeat?.done(id);
    }
  }

  /**
   * `newestPerSubject`: one subject's records of a stream batch, newest first. The newest well-formed one runs (a
   * malformed one is acknowledged and decides nothing: the next newest runs); once one is acknowledged, the records
   * with a lower position end `stale` unrun, as the guard would end them after its commit. One with the same position
   * still runs (the guard tells a duplicate from another event's stale). If a record is not acknowledged, the rest
   * are deferred, so the checkpoint (the lowest failed sequence number) falls to the oldest: nothing older than an
   * unacknowledged record is acknowledged unrun. A lane with a record without a position (no order) runs in order.
   */
  async #deliverNewest<R>(call: Call<R>, group: UnitInProgress<R>[]): Promise<boolean> {
    const ordered = group.every((d) => positionOf(d) !== undefined);
    const lane = ordered ? group : [...group].sort((a, b) => a.index - b.index);
    let newest: UnitInProgress<R> | undefined; // the first record of the lane acknowledged
    for (const [i, d] of lane.entries()) {
      if (ordered && newest && comparePositions(positionOf(d) ?? "", positionOf(newest) ?? "") < 0) {
        superseded(call, d, newest);
        continue;
      }
      const ok = await this.#deliver(call, d, undefined);
      if (d.report.events.at(-1)?.status === "malformed") continue;
      if (!ok) {
        for (const rest of lane.slice(i + 1)) {
          const reason = ordered
            ? `a newer record of its subject (${d.report.sequenceNumber}) was not acknowledged in this batch`
            : skipReason(rest, "stream");
          defer(rest, undefined, `not processed: ${reason}`);
        }
        return false;
      }
      newest ??= d;
    }
    return true;
  }

  /** What ends a delivery before any event runs: malformed, empty, or too late. False: it has ended. */
  #start<R>(call: Call<R>, d: UnitInProgress<R>): boolean {
    d.obs.received();
    if (d.error) {
      // SQS: fail it, the redrive policy dead-letters it. Direct invokes: retrying the same bytes cannot help.
      d.obs.malformed(d.error, call.sqs ? "dead-letter" : "acknowledge");
      d.report.events.push({ status: "malformed" });
      end(d, !call.sqs);
      return false;
    }
    if (d.items.length === 0) {
      d.obs.log("warn", "delivery carries no event: acknowledged", { status: "empty" });
      d.report.events.push({ status: "empty" });
      end(d, true);
      return false;
    }
    if (call.deadline.signal.aborted) {
      d.obs.deferred("not started: too little time left before the Lambda times out");
      d.report.events.push({ status: "deferred" });
      end(d, false);
      return false;
    }
    return true;
  }

  /** One event through the wrapper's guard in the bound mode (not async: the guard's call is the next frame). */
  #step<R>(
    call: Call<R>,
    d: UnitInProgress<R>,
    item: Extract<Item, { kind: "event" }>,
  ): Promise<GuardOutcome<R>> {
    const { event, guarded } = item;
    // Per call, not per guard: the one guard serves every event, each observed by its own delivery.
    const options: RunOptions = {
      deadlineMs: call.deadline.deadlineMs,
      signal: call.deadline.signal,
      onEvent: d.obs.trace(guarded),
    };
    const { bound } = call;
    if (bound.mode === "apply") {
      const compute = bound.handler;
      return this.#o.guard.apply(
        guarded,
        (actx) => timed(d.obs, () => compute(event, withDelivery(actx, d.obs, call.context))),
        options,
      );
    }
    const handler = bound.handler;
    return this.#o.guard.run(guarded, (gctx) => runHandler(handler, event, gctx, d.obs, call), options);
  }

  /** An event's outcome: observed (one line, one counter) and reported; its status. */
  #ended<R>(
    call: Call<R>,
    d: UnitInProgress<R>,
    { guarded }: Extract<Item, { kind: "event" }>,
    outcome: GuardOutcome<R> | { thrown: unknown },
    durationMs: number,
  ): DeliveryStatus {
    const subject = guarded.subject;
    if ("thrown" in outcome) {
      const error = outcome.thrown;
      const malformed =
        error instanceof SubjectTooLongError ||
        error instanceof InvalidPositionError ||
        error instanceof MalformedEventError;
      if (malformed) d.obs.malformed(error, call.sqs ? "dead-letter" : "acknowledge");
      else d.obs.storeFailed(subject, error);
      const status = malformed ? "malformed" : "failed";
      d.report.events.push({ status, subject });
      return status;
    }
    d.obs.outcome(guarded, outcome, durationMs, call.bound.mode === "run");
    const r: EventReport<R> = { status: outcome.status, subject };
    if (outcome.status === "processed" || (outcome.status === "duplicate" && outcome.result !== undefined)) {
      r.result = outcome.result as R;
    }
    d.report.events.push(r);
    return outcome.status;
  }
}

/** The handler of the runner's mode, bound to it: the one place the mode's handler type is asserted. */
function bind<R>(mode: WrapperMode, handler: AnyEventHandler<R>): Bound<R> {
  return mode === "apply"
    ? { mode, handler: handler as ApplyEventHandler<R, AnyHandledEvent> }
    : { mode, handler: handler as EventHandler<R, AnyHandledEvent> };
}

/** A planned unit with its observer and an empty report. */
function delivery<R>(plan: Plan, inv: InvocationObserver): UnitInProgress<R> {
  const d = plan.unit.delivery;
  const report: DeliveryReport<R> = {
    correlationId: d.correlationId,
    recordIndex: d.recordIndex,
    envelope: d.envelope,
    ok: false,
    events: [],
  };
  if (d.sqs) report.messageId = d.sqs.messageId;
  if (d.stream) report.sequenceNumber = d.stream.sequenceNumber;
  // The plan is this delivery's own: extended in place (a literal with properties after a spread is V8's slow path).
  return Object.assign(plan, { obs: inv.delivery(d), report });
}

/** The trigger parsed units came from. */
function triggerOf(units: readonly DeliveryUnit[]): Exclude<Trigger, "any"> {
  const batch = batchKindOf(units);
  if (batch !== "stream") return batch;
  return units[0]?.delivery.envelope === "kinesis" ? "kinesis" : "dynamodb-streams";
}

/** Why a record after a failure in its lane is not run. */
function skipReason(d: Plan, batch: BatchKind): string {
  if (batch !== "stream") return `an earlier message of group ${d.group ?? "?"} failed in this batch`;
  const subject = d.items.find((i) => i.kind === "event")?.guarded.subject ?? "?";
  return `an earlier record of ${subject} failed in this batch (Lambda resumes the shard there)`;
}

/**
 * A stream batch's checkpoint: the lowest sequence number among the failed records (a batch is one shard's records
 * in order, so it is the first failed one); Lambda acknowledges the records before it and redelivers the rest. None
 * failed: an empty list, the whole batch acknowledged.
 */
function checkpoint<R>(failed: UnitInProgress<R>[]): StreamBatchResponse["batchItemFailures"] {
  let first: { sequenceNumber: string; position: string } | undefined;
  for (const d of failed) {
    const sequenceNumber = d.unit.delivery.stream?.sequenceNumber;
    if (sequenceNumber === undefined) continue; // malformed records are acknowledged, never failed
    const position = positionFromSequenceNumber(sequenceNumber);
    if (first === undefined || comparePositions(position, first.position) < 0)
      first = { sequenceNumber, position };
  }
  return first === undefined ? [] : [{ itemIdentifier: first.sequenceNumber }];
}

/** A stream delivery's one event's position (a stream unit carries one event). */
function positionOf(d: Plan): string | undefined {
  const item = d.items.find((i) => i.kind === "event");
  return item?.kind === "event" ? item.guarded.position : undefined;
}

/**
 * A subject's records, newest first: greatest position first, and on a tie the later record first (the guard ends
 * an equal position of another identity stale, and the same identity duplicate: either way acknowledged). Records
 * without a position keep their place (their lane runs in order).
 */
function newestFirst<P extends Plan>(items: readonly P[]): P[] {
  return [...items].sort((a, b) => {
    const pa = positionOf(a);
    const pb = positionOf(b);
    const byPosition = pa === undefined || pb === undefined ? 0 : comparePositions(pb, pa);
    return byPosition !== 0 ? byPosition : b.index - a.index;
  });
}

/**
 * An older record of a subject whose newest record in the batch was acknowledged: `stale`, observed and reported as
 * the guard's stale outcome would be (one line, the `stale` counter), without a request.
 */
function superseded<R>(call: Call<R>, d: UnitInProgress<R>, newest: UnitInProgress<R>): void {
  const item = d.items.find((i) => i.kind === "event");
  if (item?.kind !== "event") return;
  d.obs.received();
  const current = positionOf(newest) ?? "-";
  d.obs.outcome(
    item.guarded,
    { status: "stale", position: item.guarded.position, current },
    0,
    call.bound.mode === "run",
  );
  d.report.events.push({ status: "stale", subject: item.guarded.subject });
  end(d, true);
}

/** Marks the delivery's report ok or failed; returns `ok`. */
function end<R>(d: UnitInProgress<R>, ok: boolean): boolean {
  d.report.ok = ok;
  return ok;
}

/** A delivery left for a later invocation (after a failure in its FIFO group). */
function defer<R>(d: UnitInProgress<R>, heartbeat: HeartbeatRun | undefined, reason: string): void {
  d.obs.received();
  d.obs.deferred(reason);
  d.report.events.push({ status: "deferred" });
  end(d, false);
  const id = d.unit.delivery.sqs?.messageId;
  if (id !== undefined) heartbeat?.done(id);
}

/**
 * Mode `run`: the handler under the lease. Its signal is the lease's, which also aborts at the Lambda deadline: the
 * guard's lease follows the deadline's signal, passed as the run's `signal` (#step).
 */
function runHandler<R>(
  handler: EventHandler<R, AnyHandledEvent>,
  event: AnyHandledEvent,
  gctx: GuardContext,
  obs: DeliveryObserver,
  call: Call<R>,
): Promise<R> {
  const ctx = withDelivery(gctx, obs, call.context);
  return timed(obs, () => handler(event, ctx));
}

/** The guard's context (either mode's) plus the delivery, the Lambda context and a child logger made on first use. */
function withDelivery<C extends object>(
  gctx: C,
  obs: DeliveryObserver,
  context: Context | undefined,
): C & DeliveryContext {
  // A getter in the literal: an own enumerable property, as a defineProperty would make, at a literal's cost. The
  // spread last: properties after a spread take V8's slow path (µs per event); the guard's context has none of these.
  return {
    delivery: obs.delivery,
    lambdaContext: context,
    get logger() {
      return obs.childLogger();
    },
    ...gctx,
  };
}

/** Runs the user's handler, counting its run time (one value per run: an apply retried with another fence is two). */
async function timed<R>(obs: DeliveryObserver, handler: () => R | Promise<R>): Promise<R> {
  const started = performance.now();
  try {
    return await handler();
  } finally {
    obs.handlerDuration(performance.now() - started);
  }
}

function flush(inv: InvocationObserver): void {
  try {
    inv.flush();
  } catch (error) {
    // Metrics must never turn a good batch into a failed one.
    inv.log("warn", `metrics could not be published: ${describeError(error)}`, { error });
  }
}
