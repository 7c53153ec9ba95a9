import { AsyncLocalStorage } from "node:async_hooks";
import type { Guard, GuardOutcome, RunOptions } from "../core/guard.js";
import type { StateStore } from "../core/store.js";
import type { WorkerState } from "./faulty-store.js";
import { guardFor } from "./history.js";
import type { RunningHistory } from "./running-history.js";

/** One guard call a wrapper made: its number, the store decorator's state, and what its handler saw. */
export interface CallInfo {
  call: number;
  state: WorkerState;
  guard: Guard;
  /** The SQS message whose event the handler ran for (set by the handler: the guard does not know it). */
  messageId?: string;
  /** The fences the handler (mode run) or each successful compute (mode apply) ran with. */
  fences: number[];
  outcome?: GuardOutcome<unknown>;
}

const current = new AsyncLocalStorage<CallInfo>();

/** The guard call whose handler is running (the wrapper calls the handler inside it). */
export function currentCall(): CallInfo {
  const info = current.getStore();
  if (!info) throw new Error("wrapper history: a handler ran outside a guard call");
  return info;
}

/**
 * The guard a wrapper history's runner holds: each `run`/`apply` is one real guard over the shared store behind a
 * fault decorator of its own, so every store call is attributed to its guard call, though a batch runs several at
 * once. Waiting gives up before the invocation's deadline (`deadlineMs()`, virtual), as the wrappers set it from
 * the Lambda context's remaining time.
 */
export function callGuard(
  run: RunningHistory,
  shared: StateStore,
  worker: { id: number; offsetMs: number },
  deadlineMs: () => number,
  calls: CallInfo[],
): Guard {
  const begin = (): CallInfo => {
    const state: WorkerState = {
      id: worker.id,
      offsetMs: worker.offsetMs,
      call: ++run.calls,
      frozenUntil: 0,
    };
    const info: CallInfo = { call: state.call, state, guard: guardFor(run, shared, state), fences: [] };
    calls.push(info);
    return info;
  };
  const options = (o: RunOptions | undefined): RunOptions => ({
    ...o,
    deadlineMs: o?.deadlineMs ?? deadlineMs() - 500 + worker.offsetMs,
  });
  const within = async <T>(info: CallInfo, call: () => Promise<T>): Promise<T> => {
    try {
      const out = await call();
      info.outcome = out as GuardOutcome<unknown>;
      return out;
    } finally {
      run.observer.callEnded(info.call);
    }
  };
  const template = guardFor(run, shared, {
    id: worker.id,
    offsetMs: worker.offsetMs,
    call: 0,
    frozenUntil: 0,
  });
  return {
    options: template.options,
    run: (event, handler, o) => {
      const info = begin();
      return current.run(info, () => within(info, () => info.guard.run(event, handler, options(o))));
    },
    apply: (event, compute, o) => {
      const info = begin();
      return current.run(info, () => within(info, () => info.guard.apply(event, compute, options(o))));
    },
  };
}
