import type { Context, SQSBatchResponse } from "aws-lambda";
import { describeError, describeValue } from "../core/describe-value.js";
import { InvalidPositionError, MalformedEventError, SubjectTooLongError } from "../core/errors.js";
import type { Delivery, EnvelopeKind, MessageEvent, S3TestEvent } from "../core/event.js";
import type { GuardContext, GuardedEvent, GuardOutcome, RunOptions } from "../core/guard.js";
import { type DeliveryStatus, isAcknowledged } from "../core/outcomes.js";
import { toPosition } from "../core/position.js";
import { type DeliveryObserver, type InvocationObserver, Observer } from "../observe/observer.js";
import { parseInvocation } from "../sources/parse-invocation.js";
import type { DeliveryUnit } from "../sources/types.js";
import { anySignal, type Deadline, lambdaDeadline } from "./deadline.js";
import { DeliveryFailedError } from "./errors.js";
import { groupLanes, type Lane, runLanes } from "./lanes.js";
import type {
  ApplyEventHandler,
  DeliveryContext,
  EventHandler,
  HandledEvent,
  ResolvedOptions,
  WrapperMode,
} from "./options.js";
import { type HeartbeatRun, type SqsSender, VisibilityHeartbeat } from "./visibility-heartbeat.js";

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
  ok: boolean;
  events: EventReport<R>[];
}

/** What a direct (S3, EventBridge) invocation returns: Lambda ignores it for asynchronous invokes. */
export interface InvocationReport<R = unknown> {
  deliveries: DeliveryReport<R>[];
}

/** An invocation's answer: SQS's batch response with the report, or the report of a direct invoke. */
export type InvocationResult<R> =
  | { kind: "sqs"; response: SQSBatchResponse; report: InvocationReport<R> }
  | { kind: "direct"; report: InvocationReport<R> };

/** Which invocations a typed wrapper accepts: `sqs` batches, `direct` S3/EventBridge invokes, or `any`. */
export type Trigger = "sqs" | "direct" | "any";

/** The user's handler of either mode: the runner's mode says which it is. */
export type AnyEventHandler<R> = EventHandler<R> | ApplyEventHandler<R>;

/** Acknowledged as the outcome table says (src/core/outcomes.ts); `malformed` is decided per source below. */
const acknowledged = isAcknowledged;

type Item =
  | { kind: "test"; event: S3TestEvent }
  | { kind: "event"; event: HandledEvent; guarded: GuardedEvent };

type Plan = {
  unit: DeliveryUnit;
  index: number;
  error?: MalformedEventError;
  items: Item[];
  /** SQS: the message id, group and queue ARN, read leniently when the record's metadata is broken. */
  messageId?: string;
  group?: string;
  arn?: string;
};

const isSqsEnvelope = (e: EnvelopeKind) => e !== "s3" && e !== "eventbridge";

/** Runs invocations for one wrapper: options resolved once; guard, observer and heartbeat reused across invocations. */
export class InvocationRunner {
  readonly #o: ResolvedOptions;
  readonly #what: string;
  readonly #observer: Observer;
  readonly #heartbeat: VisibilityHeartbeat | undefined;

  /** How each event reaches the guard: `guard.run` or `guard.apply`. */
  get mode(): WrapperMode {
    return this.#o.mode;
  }

  constructor(what: string, resolved: ResolvedOptions) {
    this.#what = what;
    this.#o = resolved;
    this.#observer = new Observer({
      logger: resolved.logger,
      metrics: resolved.metrics,
      pipeline: resolved.pipeline,
    });
    const hb = resolved.visibilityHeartbeat;
    this.#heartbeat = hb
      ? new VisibilityHeartbeat(hb, { client: resolved.sqsClient ?? defaultSqsClient })
      : undefined;
  }

  /** Parse → run every delivery (lanes, heartbeat, guard) → respond: batch item failures, or throw for a retry. */
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
    const sqs = units.every((u) => isSqsEnvelope(u.delivery.envelope));
    const reports = await this.#execute(units, { handler, inv, context, sqs, input });
    return this.#respond(reports, input, inv, sqs);
  }

  /** The invocation's deliveries; an invocation the wrapper cannot take is logged, counted and thrown. */
  #parse(input: unknown, trigger: Trigger, inv: InvocationObserver): DeliveryUnit[] {
    try {
      const units = parseInvocation(input, this.#o.parse);
      const sqs = units.every((u) => isSqsEnvelope(u.delivery.envelope));
      if ((trigger === "sqs" && !sqs) || (trigger === "direct" && sqs)) {
        throw new MalformedEventError(
          `${this.#what} got ${sqs ? "an SQS batch" : "a direct S3/EventBridge invocation"}; ` +
            `use ${sqs ? "sqsHandler" : "s3Handler or eventBridgeHandler"} (or wrapHandler, which takes both)`,
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

  /** Runs every delivery: lanes by subject (FIFO: by group), the visibility heartbeat, a deadline from the context. */
  async #execute<R>(units: DeliveryUnit[], env: Omit<UnitEnv<R>, "deadline">): Promise<DeliveryReport<R>[]> {
    const { inv, sqs } = env;
    const deadline = lambdaDeadline(env.context, this.#o.deadlineMarginMs);
    const reports: DeliveryReport<R>[] = [];
    let heartbeat: HeartbeatRun | undefined;
    // A failed message stops being extended, so it comes back after its visibility timeout. A succeeded one is
    // deleted only when the whole batch returns: it stays extended until then, or it would be redelivered.
    const done = (unit: DeliveryUnit, ok: boolean) => {
      const id = unit.delivery.sqs?.messageId;
      if (id !== undefined && !ok) heartbeat?.done(id);
    };
    const defer = (plan: Plan, reason: string) => {
      const obs = inv.delivery(plan.unit.delivery);
      obs.received();
      obs.deferred(`not processed: ${reason}`);
      reports[plan.index] = report(plan.unit, false, [{ status: "deferred" }]);
      done(plan.unit, false);
    };
    try {
      heartbeat = sqs ? this.#startHeartbeat(units, inv) : undefined;
      const plans = units.map((unit, index) => ({
        ...this.#plan(unit, index),
        ...sqsOrderOf(unit, env.input),
      }));
      const { lanes, blocked } = planLanes(plans, sqs);
      for (const b of blocked) defer(b.plan, b.reason);
      await runLanes(
        lanes,
        this.#o.concurrency,
        async (plan) => {
          const obs = inv.delivery(plan.unit.delivery);
          try {
            reports[plan.index] = await this.#runUnit(plan, obs, { ...env, deadline });
          } finally {
            done(plan.unit, reports[plan.index]?.ok ?? false);
          }
          return reports[plan.index]?.ok ?? false;
        },
        (plan) => defer(plan, `an earlier message of group ${plan.group ?? "?"} failed in this batch`),
      );
    } finally {
      await heartbeat?.stop();
      deadline.dispose();
      flush(inv);
    }
    return reports;
  }

  /** SQS: the failed records as batch item failures. Direct invokes: throw when any record failed (Lambda retries). */
  #respond<R>(
    reports: DeliveryReport<R>[],
    input: unknown,
    inv: InvocationObserver,
    sqs: boolean,
  ): InvocationResult<R> {
    const invocationReport: InvocationReport<R> = { deliveries: reports };
    if (sqs) {
      const batchItemFailures: SQSBatchResponse["batchItemFailures"] = [];
      for (const r of reports) {
        if (r.ok) continue;
        const id = r.messageId ?? rawMessageId(input, r.recordIndex);
        if (id !== undefined) batchItemFailures.push({ itemIdentifier: id });
        else {
          // Only hand-made events lack a messageId; an empty identifier would fail the whole batch.
          inv.log(
            "error",
            `delivery ${r.correlationId} failed but has no messageId to report: acknowledged`,
            {
              recordIndex: r.recordIndex,
            },
          );
        }
      }
      return { kind: "sqs", response: { batchItemFailures }, report: invocationReport };
    }
    const failures = reports.filter((r) => !r.ok);
    if (failures.length > 0) {
      throw new DeliveryFailedError(
        failures.map((f) => ({
          correlationId: f.correlationId,
          recordIndex: f.recordIndex,
          status: f.events.find((e) => !acknowledged(e.status))?.status ?? "failed",
        })),
        reports.length,
      );
    }
    return { kind: "direct", report: invocationReport };
  }

  #startHeartbeat(units: DeliveryUnit[], inv: InvocationObserver): HeartbeatRun | undefined {
    if (!this.#heartbeat) return undefined;
    const observers = new Map<string, DeliveryObserver>();
    const messages = units.flatMap((u) => {
      const s = u.delivery.sqs;
      if (!s) return [];
      observers.set(s.messageId, inv.delivery(u.delivery));
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

  /** Derives subject, identity and position up front: a throw there makes the delivery malformed. */
  #plan(unit: DeliveryUnit, index: number): Plan {
    if (unit.error) return { unit, index, error: unit.error, items: [] };
    const items: Item[] = [];
    try {
      for (const event of unit.events) {
        if (event.kind === "s3-test") items.push({ kind: "test", event });
        else if (event.kind === "s3") {
          const guarded: GuardedEvent = { subject: event.subject, identity: event.identity };
          // Unordered S3 events keep their identity (sequencer + operation) but no position: dedupe only.
          if (event.position !== undefined && this.#o.orderS3Events) guarded.position = event.position;
          items.push({ kind: "event", event, guarded: this.#withFingerprint(event, guarded) });
        } else {
          const guarded = this.#deriveMessage(event, unit.delivery);
          items.push({ kind: "event", event, guarded: this.#withFingerprint(event, guarded) });
        }
      }
    } catch (error) {
      const malformed =
        error instanceof MalformedEventError
          ? error
          : new MalformedEventError(`cannot derive the message's keys: ${describeError(error)}`, "", {
              cause: error,
            });
      return { unit, index, error: malformed, items: [] };
    }
    return { unit, index, items };
  }

  #withFingerprint(event: HandledEvent, guarded: GuardedEvent): GuardedEvent {
    const fingerprint = this.#o.payloadFingerprint?.(event);
    if (fingerprint === undefined) return guarded;
    if (typeof fingerprint !== "string" || fingerprint.length === 0) {
      throw new MalformedEventError(
        `payloadFingerprint gave ${describeValue(fingerprint)}, not a string`,
        "",
      );
    }
    return { ...guarded, fingerprint };
  }

  #deriveMessage(event: MessageEvent, delivery: Delivery): GuardedEvent {
    const fallback = delivery.eventBridge?.id ?? delivery.sns?.messageId ?? event.messageId;
    const subject = this.#o.subject ? this.#o.subject(event, delivery) : fallback;
    requireKey("subject", subject);
    const raw = this.#o.position?.(event, delivery);
    const position = raw === undefined ? undefined : toPosition(raw);
    const identity = this.#o.identity
      ? this.#o.identity(event, delivery)
      : position !== undefined
        ? `p:${position}`
        : fallback;
    requireKey("identity", identity);
    return position === undefined ? { subject, identity } : { subject, identity, position };
  }

  async #runUnit<R>(plan: Plan, obs: DeliveryObserver, env: UnitEnv<R>): Promise<DeliveryReport<R>> {
    const { unit } = plan;
    obs.received();
    if (plan.error) {
      // SQS: fail it, the redrive policy dead-letters it. Direct invokes: retrying the same bytes cannot help.
      obs.malformed(plan.error, env.sqs ? "dead-letter" : "acknowledge");
      return report(unit, !env.sqs, [{ status: "malformed" }]);
    }
    if (plan.items.length === 0) {
      obs.log("warn", "delivery carries no event: acknowledged", { status: "empty" });
      return report(unit, true, [{ status: "empty" }]);
    }
    if (env.deadline.signal.aborted) {
      obs.deferred("not started: too little time left before the Lambda times out");
      return report(unit, false, [{ status: "deferred" }]);
    }
    const events: EventReport<R>[] = [];
    for (const item of plan.items) {
      if (item.kind === "test") {
        obs.testEvent(item.event.bucket);
        events.push({ status: "test-event" });
        continue;
      }
      const r = await this.#runEvent(item.event, item.guarded, obs, env);
      events.push(r);
      if (r.status === "malformed") {
        return report(unit, !env.sqs, events);
      }
      // The rest of the delivery is redelivered with it; what did succeed comes back as duplicates.
      if (!acknowledged(r.status)) return report(unit, false, events);
    }
    return report(unit, true, events);
  }

  async #runEvent<R>(
    event: HandledEvent,
    guarded: GuardedEvent,
    obs: DeliveryObserver,
    env: UnitEnv<R>,
  ): Promise<EventReport<R>> {
    const subject = guarded.subject;
    const started = performance.now();
    let outcome: GuardOutcome<R>;
    try {
      outcome = await this.#guard(event, guarded, obs, env);
    } catch (error) {
      if (
        error instanceof SubjectTooLongError ||
        error instanceof InvalidPositionError ||
        error instanceof MalformedEventError
      ) {
        obs.malformed(error, env.sqs ? "dead-letter" : "acknowledge");
        return { status: "malformed", subject };
      }
      obs.storeFailed(subject, error);
      return { status: "failed", subject };
    }
    obs.outcome(guarded, outcome, performance.now() - started, this.#o.mode === "run");
    const r: EventReport<R> = { status: outcome.status, subject };
    if (outcome.status === "processed" || (outcome.status === "duplicate" && outcome.result !== undefined)) {
      r.result = outcome.result as R;
    }
    return r;
  }

  /** One event through the wrapper's guard: the handler under `guard.run`, or computed for `guard.apply`. */
  #guard<R>(
    event: HandledEvent,
    guarded: GuardedEvent,
    obs: DeliveryObserver,
    env: UnitEnv<R>,
  ): Promise<GuardOutcome<R>> {
    // Per call, not per guard: the one guard serves every event, each observed by its own delivery.
    const call: RunOptions = {
      deadlineMs: env.deadline.deadlineMs,
      signal: env.deadline.signal,
      onEvent: obs.trace(guarded),
    };
    if (this.#o.mode === "apply") {
      const compute = env.handler as ApplyEventHandler<R>;
      return this.#o.guard.apply(
        guarded,
        (actx) => timed(obs, () => compute(event, withDelivery(actx, obs, env.context))),
        call,
      );
    }
    const handler = env.handler as EventHandler<R>;
    return this.#o.guard.run(guarded, (gctx) => runHandler(handler, event, gctx, obs, env), call);
  }
}

/** Mode `run`: the handler under the lease, its signal also aborted at the Lambda deadline. */
async function runHandler<R>(
  handler: EventHandler<R>,
  event: HandledEvent,
  gctx: GuardContext,
  obs: DeliveryObserver,
  env: UnitEnv<R>,
): Promise<R> {
  const combined = anySignal(gctx.signal, env.deadline.signal);
  try {
    const ctx = withDelivery({ ...gctx, signal: combined.signal }, obs, env.context);
    return await timed(obs, () => handler(event, ctx));
  } finally {
    combined.dispose();
  }
}

/** The guard's context (either mode's) plus the delivery, the Lambda context and a child logger made on first use. */
function withDelivery<C extends object>(
  gctx: C,
  obs: DeliveryObserver,
  context: Context | undefined,
): C & DeliveryContext {
  const ctx = { ...gctx, delivery: obs.delivery, lambdaContext: context };
  Object.defineProperty(ctx, "logger", { get: () => obs.childLogger(), enumerable: true });
  return ctx as C & DeliveryContext;
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

interface UnitEnv<R> {
  handler: AnyEventHandler<R>;
  inv: InvocationObserver;
  deadline: Deadline;
  context: Context | undefined;
  sqs: boolean;
  /** The raw invocation, read leniently for records whose metadata failed validation. */
  input: unknown;
}

function report<R>(unit: DeliveryUnit, ok: boolean, events: EventReport<R>[]): DeliveryReport<R> {
  const d = unit.delivery;
  const r: DeliveryReport<R> = {
    correlationId: d.correlationId,
    recordIndex: d.recordIndex,
    envelope: d.envelope,
    ok,
    events,
  };
  if (d.sqs) r.messageId = d.sqs.messageId;
  return r;
}

function laneKey(plan: Plan, fifo: boolean): string {
  if (fifo) return plan.group === undefined ? `#${plan.index}` : `g:${plan.group}`;
  const first = plan.items.find((i) => i.kind === "event");
  return first?.kind === "event" ? `s:${first.guarded.subject}` : `#${plan.index}`;
}

/**
 * Lanes by subject, or on a FIFO batch by message group. A FIFO record whose group cannot be read (its metadata is
 * broken) fails, and cannot be placed in its group's order: every FIFO record after it in the batch is `blocked`
 * (deferred, never run), since any of them may be of its group (docs/lambda.md: after a failure, the rest of
 * the group is not run).
 */
function planLanes(
  plans: Plan[],
  sqs: boolean,
): { lanes: Lane<Plan>[]; blocked: { plan: Plan; reason: string }[] } {
  const fifo = sqs && plans.some((p) => p.group !== undefined || isFifoArn(p.arn));
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

/** A record of the raw invocation, for the fields of one whose metadata failed validation. */
function rawRecord(input: unknown, index: number): Record<string, unknown> | undefined {
  const records = (input as { Records?: unknown })?.Records;
  const record: unknown = Array.isArray(records) ? records[index] : undefined;
  return typeof record === "object" && record !== null ? (record as Record<string, unknown>) : undefined;
}

function ownString(value: unknown, name: string): string | undefined {
  if (typeof value !== "object" || value === null || !Object.hasOwn(value, name)) return undefined;
  const field = (value as Record<string, unknown>)[name];
  return typeof field === "string" && field.length > 0 ? field : undefined;
}

/** The messageId of a record whose metadata failed validation, read leniently for the batch report. */
function rawMessageId(input: unknown, index: number): string | undefined {
  return ownString(rawRecord(input, index), "messageId");
}

/**
 * An SQS record's message id, group and queue ARN: from its metadata, or read leniently from the raw record when
 * the metadata failed validation (a record that lost its group would leave its group's order).
 */
function sqsOrderOf(unit: DeliveryUnit, input: unknown): Pick<Plan, "messageId" | "group" | "arn"> {
  const sqs = unit.delivery.sqs;
  if (sqs)
    return { messageId: sqs.messageId, group: sqs.messageGroupId, arn: sqs.eventSourceArn || undefined };
  if (!isSqsEnvelope(unit.delivery.envelope)) return {};
  const record = rawRecord(input, unit.delivery.recordIndex);
  return {
    messageId: ownString(record, "messageId"),
    group: ownString(record?.attributes, "MessageGroupId"),
    arn: ownString(record, "eventSourceARN"),
  };
}

function requireKey(name: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    throw new MalformedEventError(
      `${name} derivation returned ${describeValue(value)}, not a non-empty string`,
      "",
    );
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

async function defaultSqsClient(): Promise<SqsSender> {
  const { SQSClient } = await import("@aws-sdk/client-sqs");
  return new SQSClient({});
}
