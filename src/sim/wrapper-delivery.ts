import type { SQSRecord } from "aws-lambda";
import { StoreError } from "../core/errors.js";
import {
  type DeliveryStatus,
  GUARD_OUTCOME_STATUSES,
  type GuardOutcomeStatus,
  isAcknowledged,
} from "../core/outcomes.js";
import type { StateStore } from "../core/store.js";
import { ANY_TRIGGER } from "../lambda/any-trigger.js";
import { type DeliveryReport, type InvocationResult, InvocationRunner } from "../lambda/invocation.js";
import {
  type AnyHandledEvent,
  type ApplyEventHandler,
  type EventHandler,
  resolveOptions,
  type WrapperMode,
} from "../lambda/options.js";
import { compute, handle, isSuperseded, noteKnownIssues } from "./delivery.js";
import type { RunningHistory } from "./running-history.js";
import { silentObservability } from "./silent-observability.js";
import type { SimEvent } from "./sim-event.js";
import type { Message, Receipt } from "./source.js";
import { VIRTUAL_EPOCH_MS } from "./virtual-time.js";
import type { WrapperSettings } from "./wrapper-config.js";
import { type CallInfo, callGuard, currentCall } from "./wrapper-guard.js";
import { receiveBatch } from "./wrapper-source.js";

/**
 * A Lambda instance of a wrapper or stream history: one runner per mode (the real SQS or Kinesis wrapper's), over one
 * call guard.
 */
export interface WrapperWorker {
  id: number;
  runners: Record<WrapperMode, InvocationRunner>;
  /** The current invocation's deadline (virtual ms) and the guard calls it made. */
  deadline: number;
  calls: CallInfo[];
}

export type Answer = { w: number };
type SqsResult = Extract<InvocationResult<Answer>, { kind: "sqs" }>;

export function createWrapperWorker(
  run: RunningHistory,
  shared: StateStore,
  id: number,
  ws: WrapperSettings,
): WrapperWorker {
  return createWorker(run, shared, id, "sqsHandler", ws.concurrency);
}

/**
 * A worker whose runners are `what`'s: the guard's keys are the simulated event's own (the body of an SQS message, the
 * data of a Kinesis record, names it), logs and metrics silent.
 */
export function createWorker(
  run: RunningHistory,
  shared: StateStore,
  id: number,
  what: "sqsHandler" | "kinesisHandler",
  concurrency: number,
  streamOptions: { newestPerSubject?: boolean } = {},
): WrapperWorker {
  const calls: CallInfo[] = [];
  const w: WrapperWorker = { id, runners: {} as WrapperWorker["runners"], deadline: 0, calls };
  const guard = callGuard(run, shared, { id, offsetMs: run.cfg.offsets[id] ?? 0 }, () => w.deadline, calls);
  const streams = what === "kinesisHandler";
  const common = {
    store: shared,
    pipeline: "chaos",
    ...(streams ? {} : { messages: "accept" as const }),
    subject: (e: AnyHandledEvent) => eventOf(run, e).subject,
    identity: (e: AnyHandledEvent) => eventOf(run, e).identity,
    position: (e: AnyHandledEvent) => eventOf(run, e).position,
    concurrency,
    ...(streams ? streamOptions : {}),
    ...silentObservability(),
  };
  for (const mode of ["run", "apply"] as const) {
    const resolved = resolveOptions(what, mode === "apply" ? { ...common, mode } : common, streams);
    w.runners[mode] = new InvocationRunner(what, { ...resolved, guard }, ANY_TRIGGER);
  }
  return w;
}

/** A Lambda instance polls SQS batches until the queue is empty. */
export async function wrapperWorkerLoop(
  run: RunningHistory,
  w: WrapperWorker,
  ws: WrapperSettings,
): Promise<void> {
  const groups = [...new Set(run.events.map((e) => e.subject))];
  const groupOf = ws.fifo
    ? (m: Message) => `g${groups.indexOf((run.events[m.event] as SimEvent).subject)}`
    : undefined;
  for (;;) {
    const batch = receiveBatch(run.source, ws.maxBatch, groupOf);
    if (batch === "done") break;
    if (Array.isArray(batch)) await invoke(run, w, ws, batch, groupOf);
    else await run.sim.sleep(batch.waitMs);
  }
  run.workersDone++;
}

/** One invocation of the SQS wrapper on a batch, its answer checked, then each message deleted or returned. */
async function invoke(
  run: RunningHistory,
  w: WrapperWorker,
  ws: WrapperSettings,
  receipts: Receipt[],
  groupOf: ((m: Message) => string) | undefined,
): Promise<void> {
  const mode: WrapperMode = run.chooser.chance(run.cfg.applyShare) ? "apply" : "run";
  const records = receipts.map((r) => sqsRecord(r, groupOf));
  w.deadline = (receipts[0] as Receipt).deadline;
  w.calls.length = 0;
  run.observer.log(
    () =>
      `w${w.id} receives ${mode} batch ${records.map((r, i) => `${r.messageId}=${describe(run, receipts[i] as Receipt)}`).join(" ")}`,
  );
  const result = await batchAnswer(run, w, mode, handlerOf(run, ws, mode), records, "sqs");
  run.sampleDue = true;
  if (run.source.timedOut(receipts[0] as Receipt)) {
    run.observer.log(() => `w${w.id} batch done, but the invocation timed out: nothing deleted nor returned`);
    return;
  }
  const failed = new Set(result?.response.batchItemFailures.map((f) => f.itemIdentifier) ?? []);
  run.observer.log(() => `w${w.id} batch item failures: ${[...failed].join(" ") || "none"}`);
  if (result) await checkAnswer(run, w, { receipts, records, result, failed, fifo: groupOf !== undefined });
  for (const [i, r] of receipts.entries()) {
    const id = (records[i] as SQSRecord).messageId;
    const report = result?.report.deliveries.find((d) => d.recordIndex === i);
    record(run, w, r, mode, id, report, !failed.has(id) && result !== undefined);
  }
}

/** The answer each batch trigger expects of its wrapper, and the wrapper's name in violations. */
const BATCH_ANSWERS = {
  sqs: { kind: "sqs", wrapper: "SQS" },
  kinesis: { kind: "stream", wrapper: "Kinesis" },
} as const;
type BatchTrigger = keyof typeof BATCH_ANSWERS;
type BatchResult<T extends BatchTrigger> = Extract<
  InvocationResult<Answer>,
  { kind: (typeof BATCH_ANSWERS)[T]["kind"] }
>;

/**
 * The wrapper's answer to a batch of `records`, when it answers as its trigger's batch: another answer, or a throw,
 * is an I4 violation, and no answer.
 */
export async function batchAnswer<T extends BatchTrigger>(
  run: RunningHistory,
  w: WrapperWorker,
  mode: WrapperMode,
  handler: EventHandler<Answer> | ApplyEventHandler<Answer>,
  records: unknown[],
  trigger: T,
): Promise<BatchResult<T> | undefined> {
  const { kind, wrapper } = BATCH_ANSWERS[trigger];
  const failed = (what: string) =>
    run.observer.violate("I4", false, `w${w.id}: the ${wrapper} wrapper ${what}`);
  try {
    const out = await w.runners[mode].run(handler, { Records: records }, undefined, trigger);
    if (out.kind === kind) return out as BatchResult<T>;
    failed(`answered a batch as ${out.kind}`);
  } catch (error) {
    failed(`threw instead of answering: ${String(error)}`);
  }
  return undefined;
}

/** The user's handler of `mode`: the simulator's effects (delivery.ts), and sometimes a throw of its own. */
export function handlerOf(
  run: RunningHistory,
  ws: Pick<WrapperSettings, "handlerErrorRate">,
  mode: WrapperMode,
): EventHandler<Answer> | ApplyEventHandler<Answer> {
  if (mode === "apply") {
    const computeHandler: ApplyEventHandler<Answer> = (event, ctx) => {
      const info = ranFor(recordId(ctx.delivery));
      const e = eventOf(run, event);
      const error = handlerError(run, ws);
      if (error) throw error;
      const out = compute(run, { state: info.state, guard: info.guard }, e, ctx);
      info.fences.push(ctx.fence);
      return out;
    };
    return computeHandler;
  }
  const runHandler: EventHandler<Answer> = async (event, ctx) => {
    const info = ranFor(recordId(ctx.delivery));
    info.fences.push(ctx.fence);
    const e = eventOf(run, event);
    const error = handlerError(run, ws);
    if (error && run.chooser.chance(0.5)) {
      run.observer.stopped(e.key, ctx.fence);
      throw error;
    }
    const how =
      e.position !== undefined && run.chooser.chance(run.cfg.directShare) ? "run-direct" : "run-atomic";
    const out = await handle(run, { state: info.state, guard: info.guard }, e, how, ctx);
    if (error) throw error;
    return out;
  };
  return runHandler;
}

/** What a record is known by in the checks: its SQS message id, or its stream sequence number. */
function recordId(d: {
  sqs?: { messageId: string };
  stream?: { sequenceNumber: string };
}): string | undefined {
  return d.sqs?.messageId ?? d.stream?.sequenceNumber;
}

function ranFor(messageId: string | undefined): CallInfo {
  const info = currentCall();
  if (messageId !== undefined) info.messageId = messageId;
  return info;
}

/** The user's own failure: an Error, or a retryable StoreError of a store the handler reads (not the guard's). */
function handlerError(run: RunningHistory, ws: Pick<WrapperSettings, "handlerErrorRate">): Error | undefined {
  if (!run.chooser.chance(ws.handlerErrorRate)) return undefined;
  run.faults.count("handler-error");
  return run.chooser.chance(0.5)
    ? new StoreError("the handler's own store read timed out (injected)", { retryable: true })
    : new Error("the handler failed (injected)");
}

interface Answered {
  receipts: Receipt[];
  records: SQSRecord[];
  result: SqsResult;
  failed: ReadonlySet<string>;
  fifo: boolean;
}

/**
 * I4: every record has one report, and is a batch item failure exactly when its outcome is not acknowledged; on a
 * FIFO queue no record runs after an earlier record of its group failed in the batch. I6: a record returned for a
 * redelivery did not commit by itself (its own commit landed, yet the outcome says otherwise), unless the store
 * never confirmed (`unconfirmed`).
 */
async function checkAnswer(run: RunningHistory, w: WrapperWorker, a: Answered): Promise<void> {
  const { observer } = run;
  const failedGroups = new Set<string>();
  for (const [i, r] of a.receipts.entries()) {
    const id = (a.records[i] as SQSRecord).messageId;
    const reports = a.result.report.deliveries.filter((d) => d.recordIndex === i);
    const report = reports[0];
    if (reports.length !== 1 || !report) {
      observer.violate("I4", false, `w${w.id}: record ${id} has ${reports.length} reports`);
      continue;
    }
    const statuses = report.events.map((x) => x.status);
    const acknowledged = statuses.length > 0 && statuses.every((s) => isAcknowledged(s));
    if (report.ok !== acknowledged || a.failed.has(id) === report.ok)
      observer.violate(
        "I4",
        false,
        `w${w.id}: record ${id} ended ${statuses.join(",")} but is ${a.failed.has(id) ? "" : "not "}a batch item failure`,
      );
    const group = a.records[i]?.attributes.MessageGroupId;
    if (a.fifo && group !== undefined) {
      if (failedGroups.has(group) && statuses.some((s) => s !== "deferred"))
        observer.violate(
          "I4",
          false,
          `w${w.id}: record ${id} ran after an earlier record of group ${group} failed`,
        );
      if (!report.ok) failedGroups.add(group);
    }
    if (!report.ok && !statuses.includes("unconfirmed"))
      await checkNotCommitted(run, w, r.message.event, id, statuses);
  }
}

/** A record returned for a redelivery whose own guard call's commit landed: its effect's counter holds that fence. */
export async function checkNotCommitted(
  run: RunningHistory,
  w: Pick<WrapperWorker, "id" | "calls">,
  event: number,
  id: string,
  statuses: DeliveryStatus[],
): Promise<void> {
  const fences = w.calls.filter((c) => c.messageId === id).flatMap((c) => c.fences);
  if (fences.length === 0) return;
  const e = run.events[event] as SimEvent;
  const counter = await run.sim.track(() => run.backend.readCounter(e));
  const landed = fences.find((f) => counter.fences.includes(f));
  if (landed !== undefined)
    run.observer.violate(
      "I6",
      false,
      `w${w.id}: record ${id} (${e.subject}/${e.identity}) ended ${statuses.join(",")} and is a batch item failure, though its own commit landed (fence ${landed})`,
    );
}

const GUARD_STATUSES: readonly DeliveryStatus[] = GUARD_OUTCOME_STATUSES;

/** The queue hears the answer; a guard outcome becomes a delivery of the history, for the final checks. */
function record(
  run: RunningHistory,
  w: WrapperWorker,
  r: Receipt,
  mode: WrapperMode,
  id: string,
  report: DeliveryReport<Answer> | undefined,
  acknowledged: boolean,
): void {
  recordOutcome(run, w, r.message.event, mode, id, report, acknowledged);
  if (acknowledged) run.source.ack(r);
  else run.source.nack(r);
}

/** A record's guard outcome becomes a delivery of the history, for the final checks. */
export function recordOutcome(
  run: RunningHistory,
  w: Pick<WrapperWorker, "id" | "calls">,
  event: number,
  mode: WrapperMode,
  id: string,
  report: DeliveryReport<Answer> | undefined,
  acknowledged: boolean,
): void {
  const e = run.events[event] as SimEvent;
  const status = report?.events[0]?.status;
  const info = w.calls.find((c) => c.messageId === id);
  const out = info?.outcome;
  run.observer.log(
    () =>
      `w${w.id} ${id} ${e.subject}/${e.identity} -> ${status ?? "no report"}${acknowledged ? " (ack)" : ""}`,
  );
  noteKnownIssues(run, e, out);
  if (status !== undefined && GUARD_STATUSES.includes(status)) {
    const superseded = isSuperseded(out);
    run.deliveries.push({
      event: e.index,
      worker: w.id,
      call: info?.call ?? 0,
      mode: mode === "apply" ? "apply" : "run-atomic",
      status: status as GuardOutcomeStatus,
      acknowledged,
      ...(superseded ? { superseded: true as const } : {}),
    });
  }
  if (acknowledged) e.acknowledged = true;
}

/** The simulated event a message (its body) or a Kinesis record (its data) carries: `{ event: <index> }`. */
export function eventOf(run: RunningHistory, m: AnyHandledEvent): SimEvent {
  const carried =
    m.kind === "message" ? (JSON.parse(m.body) as unknown) : m.kind === "kinesis" ? m.json : undefined;
  const event = (carried as { event?: unknown } | undefined)?.event;
  if (typeof event !== "number")
    throw new Error(`wrapper history: a ${m.kind} event carries no simulated event`);
  return run.events[event] as SimEvent;
}

function describe(run: RunningHistory, r: Receipt): string {
  const e = run.events[r.message.event] as SimEvent;
  return `${e.subject}/${e.identity}#${r.receive}`;
}

/** An SQS record as the event source mapping hands it to the function (FIFO: its group and sequence number). */
function sqsRecord(r: Receipt, groupOf: ((m: Message) => string) | undefined): SQSRecord {
  const m = r.message;
  const messageId = `m${m.id}`;
  const sent = String(VIRTUAL_EPOCH_MS);
  const attributes: Record<string, string> = {
    ApproximateReceiveCount: String(r.receive),
    SentTimestamp: sent,
    SenderId: "chaos",
    ApproximateFirstReceiveTimestamp: sent,
  };
  if (groupOf) {
    attributes.MessageGroupId = groupOf(m);
    attributes.SequenceNumber = String(m.id);
    attributes.MessageDeduplicationId = messageId;
  }
  return {
    messageId,
    receiptHandle: `${messageId}-${r.receive}`,
    body: JSON.stringify({ event: m.event }),
    attributes: attributes as unknown as SQSRecord["attributes"],
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:chaos${groupOf ? ".fifo" : ""}`,
    awsRegion: "us-east-1",
  };
}
