import { onAbort } from "./abort.js";
import type { Clock } from "./clock.js";
import { LeaseLostError, LeaseUnconfirmedError } from "./errors.js";
import type { StateStore } from "./store.js";

export interface LeaseOptions {
  store: StateStore;
  clock: Clock;
  leaseMs: number;
  heartbeatMs: number;
  expiresAfterSeconds: number;
}

export type HeartbeatTrace = { ok: boolean; error?: unknown };

/** A held claim: its handler's signal, and `stop()` (always called, in `finally`). */
export interface Lease {
  /** Aborted when the lease is lost or unconfirmed, or the outer signal aborts. */
  readonly signal: AbortSignal;
  stop(): void;
}

/**
 * Holds a claim while the handler runs: renews it every `heartbeatMs`, and aborts the handler's signal
 *
 * - with `LeaseLostError` when a renewal is refused because another claim holds a newer fence;
 * - with `LeaseUnconfirmedError` when the last confirmed lease ends by this worker's clock before a renewal
 *   confirmed a new one (renewals failing or hanging: a store outage), or the item is gone.
 *
 * The local lease only moves on a confirmed renewal, so a holder cut off from the store stops at the lease end it
 * was promised, before any other worker may take over (they wait `clockSkewMs` longer).
 */
export function holdLease(
  o: LeaseOptions,
  key: string,
  fence: number,
  confirmedUntilMs: number,
  outer: AbortSignal | undefined,
  onHeartbeat: (h: HeartbeatTrace) => void,
): Lease {
  const controller = new AbortController();
  const stopped = new AbortController();
  const abort = (reason: unknown) => {
    if (!controller.signal.aborted) controller.abort(reason);
    stopped.abort();
  };
  // The outer signal is the invocation's, shared by every record of a batch: one listener for all (abort.ts).
  const unsubscribe = outer ? onAbort(outer, () => abort(outer.reason)) : () => {};
  // The outer signal may have aborted while the claim was in flight: no event will come for that.
  if (outer?.aborted) abort(outer.reason);
  const held: HeldLease = { key, fence, untilMs: confirmedUntilMs, stopped: stopped.signal, abort };
  void watchdog(o, held);
  void heartbeat(o, held, onHeartbeat);

  return {
    signal: controller.signal,
    stop() {
      stopped.abort();
      unsubscribe();
    },
  };
}

/** What the watchdog and the heartbeat share: the confirmed lease end, which only a confirmed renewal moves. */
interface HeldLease {
  key: string;
  fence: number;
  untilMs: number;
  stopped: AbortSignal;
  abort(reason: unknown): void;
}

/** Wakes at the confirmed lease end, and again whenever a renewal moved it; aborts when it passes unmoved. */
async function watchdog(o: LeaseOptions, held: HeldLease): Promise<void> {
  while (!held.stopped.aborted) {
    const leftMs = held.untilMs - o.clock.now();
    if (leftMs <= 0) return held.abort(new LeaseUnconfirmedError(held.key, held.fence));
    await o.clock.sleep(leftMs, held.stopped);
  }
}

/** One renewal at a time; a hanging one never delays the watchdog. */
async function heartbeat(
  o: LeaseOptions,
  held: HeldLease,
  onHeartbeat: (h: HeartbeatTrace) => void,
): Promise<void> {
  const { key, fence } = held;
  for (;;) {
    await o.clock.sleep(o.heartbeatMs, held.stopped);
    if (held.stopped.aborted) return;
    const nextMs = o.clock.now() + o.leaseMs;
    try {
      const renewed = await o.store.renew({
        key,
        fence,
        leaseUntilMs: nextMs,
        expiresAtSeconds: Math.ceil(nextMs / 1000) + o.expiresAfterSeconds,
      });
      if (held.stopped.aborted) return;
      onHeartbeat({ ok: renewed.ok });
      if (renewed.ok) held.untilMs = Math.max(held.untilMs, nextMs);
      else if (renewed.state && renewed.state.fence > fence)
        return held.abort(new LeaseLostError(key, fence));
      else return held.abort(new LeaseUnconfirmedError(key, fence)); // the item is gone: nobody holds the claim
    } catch (error) {
      // Transient or not, the lease we hold is still good until `untilMs`: the watchdog ends it then.
      if (held.stopped.aborted) return;
      onHeartbeat({ ok: false, error });
    }
  }
}
