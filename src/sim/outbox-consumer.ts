import { MalformedEventError } from "../core/errors.js";
import type { ApplyContext, Guard, GuardContext, GuardOutcome } from "../core/guard.js";
import { isAcknowledged } from "../core/outcomes.js";
import type { EffectTarget } from "./backend.js";
import type { WorkerState } from "./faulty-store.js";
import { guardFor } from "./history.js";
import type { QueueMessage, QueueReceipt } from "./outbox-queue.js";
import { short } from "./outbox-relay.js";
import { type RunningOutboxHistory, withKey } from "./running-outbox-history.js";

/** Scheduler labels and the observer: consumer `i` is worker 200 + i (its clock the true one). */
const CONSUMER_IDS = 200;

/**
 * A downstream consumer: a Lambda instance polling the destination queue, each message through the real guard keyed
 * by its message id (subject and identity, as the wrappers key a message carrying `eonceMessageId` by default),
 * over the history's store behind a fault decorator of its own. Its folded effect counts the message (a counter per
 * message id); its handler throws now and then and may pause past its lease (a zombie). Acknowledged outcomes delete
 * the message, the rest return it.
 */
export async function consumerLoop(o: RunningOutboxHistory, c: number): Promise<void> {
  const { history, queue } = o;
  const state: WorkerState = { id: CONSUMER_IDS + c, offsetMs: 0, call: 0, frozenUntil: 0 };
  const guard = guardFor(history, o.shared, state);
  for (;;) {
    const r = queue.receive();
    if (r === "done") break;
    if (r === "empty") await queue.changed();
    else if ("waitMs" in r) await Promise.race([history.sim.sleep(r.waitMs), queue.changed()]);
    else await consume(o, guard, state, r);
  }
}

/** One invocation on one message: the guard call, then the queue hears the outcome (unless it timed out). */
async function consume(
  o: RunningOutboxHistory,
  guard: Guard,
  state: WorkerState,
  r: QueueReceipt,
): Promise<void> {
  const { history, queue, os } = o;
  const m = r.message;
  const target = targetOf(o, m);
  const call = ++history.calls;
  state.call = call;
  const mode = history.chooser.chance(os.applyShare) ? "apply" : "run";
  const who = `c${state.id - CONSUMER_IDS}`;
  history.observer.log(() => `${who} receives ${short(m.messageId)} (receive ${r.receive}) -> ${mode}`);
  const event = { subject: m.messageId, identity: m.messageId };
  const runOptions = { deadlineMs: r.deadline - 500 };
  let out: GuardOutcome<unknown> | undefined;
  try {
    out =
      mode === "apply"
        ? await guard.apply(event, (ctx) => fold(o, m, target, ctx), runOptions)
        : await guard.run(event, (ctx) => handle(o, state, m, target, ctx), runOptions);
  } catch (error) {
    // A message id is key text: it cannot be malformed.
    const what = error instanceof MalformedEventError ? "refused as malformed" : "ended without an outcome";
    history.observer.violate("I4", false, `consumer delivery of ${m.messageId} ${what}: ${String(error)}`);
  }
  history.observer.callEnded(call);
  history.sampleDue = true;
  const status = out?.status ?? "threw";
  if (queue.timedOut(r)) {
    history.observer.log(() => `${who} ${short(m.messageId)} -> ${status}, but the invocation timed out`);
    return;
  }
  const acknowledged = out !== undefined && isAcknowledged(out.status);
  history.observer.log(() => `${who} ${short(m.messageId)} -> ${status}${acknowledged ? " (ack)" : ""}`);
  if (acknowledged) queue.ack(r);
  else queue.nack(r);
}

/** The effect of a message: its counter, folded into the commit; the body noted for the run's fence. */
function fold(
  o: RunningOutboxHistory,
  m: QueueMessage,
  target: EffectTarget,
  ctx: ApplyContext | GuardContext,
): void {
  ctx.atCommit(o.history.backend.counter(target, ctx.fence));
  o.consumed.set(`${m.messageId}|${ctx.fence}`, m.body);
  const { history } = o;
  if (history.chooser.chance(o.os.handlerErrorRate)) {
    history.faults.count("handler-error");
    throw new Error("the consumer's handler failed (injected)");
  }
}

/** `run`'s handler: the effect folded, then work or a pause past the lease (renewals frozen), as upstream. */
async function handle(
  o: RunningOutboxHistory,
  state: WorkerState,
  m: QueueMessage,
  target: EffectTarget,
  ctx: GuardContext,
): Promise<void> {
  const { history } = o;
  try {
    fold(o, m, target, ctx);
    const g = history.cfg.guard;
    if (history.faults.pause()) {
      const ms = g.leaseMs + g.clockSkewMs + history.chooser.int(50, g.leaseMs);
      history.observer.log(
        () => `c${state.id - CONSUMER_IDS} PAUSES ${ms}ms holding ${target.key} f${ctx.fence}`,
      );
      history.observer.stopped(target.key, ctx.fence);
      state.frozenUntil = history.sim.now + ms;
      await history.sim.sleep(ms);
    } else {
      const ms = history.chooser.int(0, history.cfg.maxWorkMs);
      if (ms > 0) await history.sim.sleep(ms, ctx.signal);
      if (ctx.signal.aborted) throw ctx.signal.reason;
    }
  } finally {
    history.observer.stopped(target.key, ctx.fence);
  }
}

/** The effect target of a message: its planned one, or one of its own for an id no event publishes. */
function targetOf(o: RunningOutboxHistory, m: QueueMessage): EffectTarget {
  const planned = o.planned.get(m.messageId);
  if (planned) return planned.target;
  const stray = o.strays.get(m.messageId);
  if (stray) return stray.target;
  const prefix = o.history.events[0]?.counterId ?? "";
  const target = withKey({
    counterId: `${prefix}.x${o.strays.size}`,
    subject: m.groupId,
    identity: m.messageId,
  });
  o.strays.set(m.messageId, { target, body: m.body });
  o.history.keys.push(target.key);
  return target;
}
