import { MalformedEventError } from "../core/errors.js";
import type { ApplyContext, Guard, GuardContext, GuardOutcome } from "../core/guard.js";
import { isAcknowledged } from "../core/outcomes.js";
import { positionBefore } from "../core/position.js";
import { isOutboxWrite } from "../outbox/message-id.js";
import type { WorkerState } from "./faulty-store.js";
import { foreignWrites } from "./foreign-values.js";
import type { Mode } from "./history-config.js";
import { KNOWN_ISSUES } from "./known-issues.js";
import type { RunningHistory } from "./running-history.js";
import type { SimEvent } from "./sim-event.js";
import type { Receipt } from "./source.js";

/** One worker of a history: its state (clock offset, call in progress, pause) and its guard. */
export interface Worker {
  state: WorkerState;
  guard: Guard;
}

/** A worker takes messages until the queue is empty, as Lambda invocations would. */
export async function workerLoop(run: RunningHistory, w: Worker): Promise<void> {
  for (;;) {
    const m = run.source.receive();
    if (m === "done") break;
    if ("waitMs" in m) await run.sim.sleep(m.waitMs);
    else await deliver(run, w, m);
  }
  run.workersDone++;
}

/** One invocation: the guard handles the message's event, then the queue hears the outcome (unless timed out). */
async function deliver(run: RunningHistory, w: Worker, r: Receipt): Promise<void> {
  const e = run.events[r.message.event] as SimEvent;
  const call = ++run.calls;
  w.state.call = call;
  const mode = pickMode(run, e);
  run.observer.log(
    () =>
      `w${w.state.id} receives ${e.subject}/${e.identity} (message ${r.message.id}, receive ${r.receive}) -> ${mode}`,
  );
  const result = await invoke(run, w, e, mode, r);
  const out = result === "malformed" ? undefined : result;
  run.observer.callEnded(call);
  noteKnownIssues(run, e, out);
  endDelivery(run, w, r, { e, call, mode, out, malformed: result === "malformed" });
  run.sampleDue = true;
}

/** Adds the known issues whose pattern a call's outcome shows (KNOWN_ISSUES) to the history's. */
export function noteKnownIssues(
  run: RunningHistory,
  e: SimEvent,
  out: GuardOutcome<unknown> | undefined,
): void {
  if (
    out?.status === "lease-lost" &&
    e.position !== undefined &&
    out.current &&
    positionBefore(out.current.position, e.position)
  )
    run.knownIssues.add(KNOWN_ISSUES.olderTakerLeaseLost);
}

function pickMode(run: RunningHistory, e: SimEvent): Mode {
  const { cfg, chooser } = run;
  const fixed = cfg.modes?.[e.index];
  if (fixed) return e.position === undefined && fixed !== "apply" ? "run-atomic" : fixed;
  if (chooser.chance(cfg.applyShare)) return "apply";
  if (e.position === undefined) return "run-atomic";
  return chooser.chance(cfg.directShare) ? "run-direct" : "run-atomic";
}

/**
 * The guard call; one that throws instead of returning an outcome is a violation (and no outcome), except a
 * `MalformedEventError` (keys that break the key rule): the wrappers' malformed route, checked by hostile-keys.ts.
 */
async function invoke(
  run: RunningHistory,
  w: Worker,
  e: SimEvent,
  mode: Mode,
  r: Receipt,
): Promise<GuardOutcome<unknown> | "malformed" | undefined> {
  const ge = {
    subject: e.subject,
    identity: e.identity,
    ...(e.position !== undefined ? { position: e.position } : {}),
  };
  // Waiting gives up before the invocation's deadline, as the Lambda adapters set it from the remaining time.
  const runOptions = { deadlineMs: r.deadline - 500 + w.state.offsetMs };
  try {
    if (mode === "apply") return await w.guard.apply(ge, (ctx) => compute(run, w, e, ctx), runOptions);
    return await w.guard.run(ge, (ctx) => handle(run, w, e, mode, ctx), runOptions);
  } catch (error) {
    if (error instanceof MalformedEventError) return "malformed";
    run.observer.violate("I4", false, `delivery of ${e.identity} ended without an outcome: ${String(error)}`);
    return undefined;
  }
}

/** `apply`'s compute: both effects folded into its one request. */
export function compute(run: RunningHistory, w: Worker, e: SimEvent, ctx: ApplyContext): { w: number } {
  ctx.atCommit(run.backend.counter(e, ctx.fence));
  for (const w of foreignWrites(run, e)) ctx.atCommit(w);
  run.publish?.(e, ctx);
  if (e.position !== undefined) ctx.atCommit(run.backend.sinkAtomic(e, e.position, ctx.fence));
  return { w: w.state.id };
}

/**
 * `run`'s handler: the counter folded (and, in outbox histories, the messages published), work (or a pause past the
 * lease), the sink row folded or written now.
 */
export async function handle(
  run: RunningHistory,
  w: Worker,
  e: SimEvent,
  mode: Mode,
  ctx: GuardContext,
): Promise<{ w: number }> {
  try {
    ctx.atCommit(run.backend.counter(e, ctx.fence));
    for (const w of foreignWrites(run, e)) ctx.atCommit(w);
    run.publish?.(e, ctx);
    if (run.faults.pause()) await pause(run, w, e, ctx);
    else {
      const ms = run.chooser.int(run.cfg.minWorkMs ?? 0, run.cfg.maxWorkMs);
      if (ms > 0) await run.sim.sleep(ms, ctx.signal);
      if (ctx.signal.aborted) throw ctx.signal.reason; // a well-behaved handler stops
    }
    if (e.position !== undefined) {
      if (mode === "run-direct") await sinkDirect(run, w, e, e.position, ctx.fence);
      else ctx.atCommit(run.backend.sinkAtomic(e, e.position, ctx.fence));
    }
    return { w: w.state.id };
  } finally {
    run.observer.stopped(e.key, ctx.fence);
  }
}

/** A zombie: the handler sleeps past its lease ignoring its signal, its renewals frozen, then carries on. */
async function pause(run: RunningHistory, w: Worker, e: SimEvent, ctx: GuardContext): Promise<void> {
  const g = run.cfg.guard;
  const ms = g.leaseMs + g.clockSkewMs + run.chooser.int(50, g.leaseMs);
  run.observer.log(() => `w${w.state.id} PAUSES ${ms}ms holding ${e.key} f${ctx.fence}`);
  run.observer.stopped(e.key, ctx.fence);
  w.state.frozenUntil = run.sim.now + ms;
  await run.sim.sleep(ms); // frozen: it cannot see its signal
  run.observer.log(() => `w${w.state.id} wakes (signal ${ctx.signal.aborted ? "aborted" : "live"})`);
}

/** The sink row written in its own request while holding the claim (a scheduling point like a store call). */
async function sinkDirect(
  run: RunningHistory,
  w: Worker,
  e: SimEvent,
  pos: string,
  fence: number,
): Promise<void> {
  const { sim, backend, observer } = run;
  const { subject } = e;
  await sim.gate(w.state.id, `sink ${subject}`);
  const r = await sim.track(() => backend.sinkPut(e, pos, fence));
  if (r === "applied" && !backend.sinkReportsItself) observer.sinkLanded(subject, pos, fence);
  observer.log(() => `w${w.state.id} sink put ${subject} ${pos} f${fence} -> ${r}`);
}

/**
 * The queue hears the outcome: acknowledged statuses (the outcome table) delete the message, the rest return it.
 * An invocation past its visibility timeout does neither (Lambda timed out), and its outcome is not recorded.
 */
/**
 * A processed outcome every effect of which was stale: a newer event's work held every target. The event's own
 * effects, not its messages (an inline commit whose row write is stale still lands its outbox entries).
 */
export function isSuperseded(out: GuardOutcome<unknown> | undefined): boolean {
  const effects = out?.status === "processed" ? out.writes.filter((x) => !isOutboxWrite(x)) : [];
  return effects.length > 0 && effects.every((x) => x.status === "stale");
}

function endDelivery(
  run: RunningHistory,
  w: Worker,
  r: Receipt,
  d: { e: SimEvent; call: number; mode: Mode; out: GuardOutcome<unknown> | undefined; malformed: boolean },
): void {
  const { e, call, mode, out } = d;
  const { observer, source } = run;
  // Malformed: acknowledged and counted, the direct invokes' route (the same bytes cannot succeed). The SQS route,
  // a batch item failure until the redrive policy dead-letters it, would meet the queue's duplicates 30 times.
  const status = d.malformed ? "malformed" : (out?.status ?? "threw");
  const acknowledged = d.malformed || (out ? isAcknowledged(out.status) : false);
  if (source.timedOut(r)) {
    observer.log(
      () => `w${w.state.id} ${e.subject}/${e.identity} -> ${status}, but the invocation timed out`,
    );
    return;
  }
  observer.log(() => `w${w.state.id} ${e.subject}/${e.identity} -> ${status}${acknowledged ? " (ack)" : ""}`);
  const superseded = isSuperseded(out);
  run.deliveries.push({
    event: e.index,
    worker: w.state.id,
    call,
    mode,
    status,
    acknowledged,
    ...(superseded ? { superseded: true as const } : {}),
  });
  if (acknowledged) {
    e.acknowledged = true;
    source.ack(r);
  } else source.nack(r);
}
