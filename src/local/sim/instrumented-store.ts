import { classifyRefusal, describeClaim, type Refusal } from "../../core/state.js";
import type { StateStore } from "../../core/store.js";
import { currentInvocation } from "../delivery/invocation-scope.js";
import type { GuardStep, Trace } from "./trace.js";

/**
 * Wraps a state store for local runs:
 * - a run that timed out or crashed stops renewing its lease (renew throws, like a frozen or dead
 *   process that sends nothing; the guard then keeps its lease only until it runs out), so crashed
 *   holders really do block their subject until the lease expires, as in Lambda;
 * - every protocol step is traced with the run it belongs to, for reports and timelines, whatever
 *   handler wrapper drives the guard.
 */
export function instrumentStore(store: StateStore, trace: Trace, now: () => number = Date.now): StateStore {
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
  const emitRefusal = (key: string, refusal: Refusal | undefined, position: string) => {
    if (refusal && refusal.kind !== "fence") emit(key, refusal.kind, position);
  };
  const positions = new Map<string, string>();
  return {
    get engine() {
      return store.engine;
    },
    get maxResultBytes() {
      return store.maxResultBytes;
    },
    async claim(req) {
      const result = await store.claim(req);
      if (result.claimed) {
        const how = describeClaim(result.previous, req);
        const step: GuardStep =
          how.superseded !== undefined ? "superseded" : how.tookOver ? "took-over" : "claimed";
        positions.set(`${req.key}#${result.fence}`, req.position);
        emit(req.key, step, req.position, result.fence);
      } else {
        emitRefusal(req.key, classifyRefusal(result.state, req), req.position);
      }
      return result;
    },
    async claimAndCommit(req) {
      const result = await store.claimAndCommit(req);
      if (result.claimed) emit(req.key, "committed", req.position);
      else {
        emitRefusal(req.key, classifyRefusal(result.state, req), req.position);
      }
      return result;
    },
    async renew(req) {
      if (currentInvocation()?.signal.aborted)
        throw new Error("frozen: a timed-out or crashed run renews nothing");
      return store.renew(req);
    },
    async commit(req) {
      const result = await store.commit(req);
      const position = positions.get(`${req.key}#${req.fence}`) ?? "";
      positions.delete(`${req.key}#${req.fence}`);
      emit(req.key, result.committed ? "committed" : "lease-lost", position, req.fence);
      return result;
    },
    async release(req) {
      const released = await store.release(req);
      const position = positions.get(`${req.key}#${req.fence}`) ?? "";
      positions.delete(`${req.key}#${req.fence}`);
      if (released.ok) emit(req.key, "released", position, req.fence);
      return released;
    },
    read: (key) => store.read(key),
    canFold: (write) => store.canFold(write),
  };
}
