import { type ClaimRequest, classifyRefusal, describeClaim, type StateRecord } from "../../core/state.js";
import type { ClaimResult, StateStore } from "../../core/store.js";
import { currentInvocation } from "../../local/delivery/invocation-scope.js";
import type { GuardStep, Trace } from "./trace.js";

/**
 * Wraps a state store for local runs:
 * - a run that timed out or crashed stops renewing its lease (renew throws, like a frozen or dead
 *   process that sends nothing; the guard then keeps its lease only until it runs out), so crashed
 *   holders really do block their subject until the lease expires, as in Lambda;
 * - every protocol step is traced with the run it belongs to, for reports and timelines, whatever
 *   handler wrapper drives the guard.
 *
 * Takeover and supersede come from core's describeClaim, as in the guard's own `claimed` trace event. The guard's
 * events themselves cannot be used: the store is wrapped once, while the guards are the handlers' own (created
 * by user code, possibly in a bundled copy of the package) and their events carry no position nor run.
 */
export function instrumentStore(store: StateStore, trace: Trace, now: () => number = Date.now): StateStore {
  const steps = stepRecorder(trace, now);
  return {
    get engine() {
      return store.engine;
    },
    get maxResultBytes() {
      return store.maxResultBytes;
    },
    async claim(req) {
      const result = await store.claim(req);
      steps.claimed(req, result);
      return result;
    },
    async claimAndCommit(req) {
      const result = await store.claimAndCommit(req);
      if (result.claimed) steps.emit(req.key, "committed", req.position);
      else steps.refused(req, result.state);
      return result;
    },
    async renew(req) {
      if (currentInvocation()?.signal.aborted)
        throw new Error("frozen: a timed-out or crashed run renews nothing");
      return store.renew(req);
    },
    async commit(req) {
      const result = await store.commit(req);
      steps.emit(req.key, result.committed ? "committed" : "lease-lost", steps.release(req), req.fence);
      return result;
    },
    async release(req) {
      const released = await store.release(req);
      const position = steps.release(req);
      if (released.ok) steps.emit(req.key, "released", position, req.fence);
      return released;
    },
    read: (key) => store.read(key),
    canFold: (write) => store.canFold(write),
  };
}

/** Emits `guard` trace events, remembering each claim's position for its commit or release. */
function stepRecorder(trace: Trace, now: () => number) {
  const positions = new Map<string, string>();
  const emit = (key: string, step: GuardStep, position: string, fence?: number) =>
    trace.emit({
      type: "guard",
      atMs: now(),
      runId: currentInvocation()?.runId ?? "",
      key,
      step,
      position,
      ...(fence !== undefined ? { fence } : {}),
    });
  // No step for a fence refusal or none at all: the guard simply claims again.
  const refused = (req: ClaimRequest, state: StateRecord) => {
    const refusal = classifyRefusal(state, req);
    if (refusal && refusal.kind !== "fence") emit(req.key, refusal.kind, req.position);
  };
  return {
    emit,
    refused,
    claimed(req: ClaimRequest, result: ClaimResult) {
      if (!result.claimed) return refused(req, result.state);
      const how = describeClaim(result.previous, req);
      const step = how.superseded !== undefined ? "superseded" : how.tookOver ? "took-over" : "claimed";
      positions.set(`${req.key}#${result.fence}`, req.position);
      emit(req.key, step, req.position, result.fence);
    },
    /** The position the claim `fence` was taken for, forgotten from now on. */
    release(req: { key: string; fence: number }): string {
      const position = positions.get(`${req.key}#${req.fence}`) ?? "";
      positions.delete(`${req.key}#${req.fence}`);
      return position;
    },
  };
}
