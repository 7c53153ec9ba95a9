import {
  type ForgetOptions,
  forgetWaitMs,
  leaseLive,
  resolveForgetOptions,
  type StateAdmin,
} from "../../core/state-admin.js";
import { stateKey } from "../../core/state-key.js";
import { StateNotFoundError, StateRefusedError } from "./errors.js";
import type { StateListOptions } from "./options.js";
import { describeHolder, formatDuration, type StateView, viewOf } from "./view.js";

/**
 * What each `eonce state` subcommand does, on a StateAdmin, without I/O: a view back, or a typed error
 * (StateNotFoundError, StateRefusedError: exit 1). `nowMs` is the operator's clock.
 */

/** The record a command names: a state key as it is (`o#…`, `u#…`), else a subject (its ordered key, `o#<subject>`). */
export interface StateTarget {
  key: string;
  subject?: string;
}

export function targetOf(text: string): StateTarget {
  if (text.startsWith("o#") || text.startsWith("u#")) return { key: text };
  return { key: stateKey(text, "", true), subject: text };
}

export async function getState(admin: StateAdmin, target: StateTarget, nowMs: number): Promise<StateView> {
  const record = await admin.store.read(target.key);
  if (!record) throw new StateNotFoundError(target.key);
  return viewOf(record, nowMs);
}

/** Held or stuck first (src/core/state-admin.ts compareForAdmin); `olderThanMs` by the last claim's time. */
export async function listStates(
  admin: StateAdmin,
  options: StateListOptions,
  nowMs: number,
): Promise<StateView[]> {
  const records = await admin.list({
    ...(options.status ? { status: options.status } : {}),
    ...(options.olderThanMs !== undefined ? { claimedBeforeMs: nowMs - options.olderThanMs } : {}),
    limit: options.limit ?? 50,
    nowMs,
  });
  return records.map((r) => viewOf(r, nowMs));
}

/**
 * The store's own conditional release (what the guard does after a failure): it lands only while `fence` holds a
 * running claim. Returns the record after it.
 */
export async function releaseState(
  admin: StateAdmin,
  target: StateTarget,
  fence: number,
  nowMs: number,
): Promise<StateView> {
  const r = await admin.store.release({ key: target.key, fence });
  if (r.ok) return getState(admin, target, nowMs);
  if (!r.state) throw new StateNotFoundError(target.key);
  const now = viewOf(r.state, nowMs);
  const why =
    r.state.fence === fence
      ? `${target.key} at fence ${fence} is ${r.state.status}, not running: nothing to release`
      : `the fence moved: ${target.key} holds ${describeHolder(now)} (not fence ${fence})`;
  throw new StateRefusedError(target.key, r.state, `refused: ${why}`);
}

/**
 * Deletes the record unless a lease may still hold it by its holder's clock (core forgetRefused: the lease counts
 * until `clockSkewMs` after its end), or with `force`; returns the record as it was.
 */
export async function forgetState(
  admin: StateAdmin,
  target: StateTarget,
  options: ForgetOptions,
): Promise<StateView> {
  const o = resolveForgetOptions(options);
  const r = await admin.forget(target.key, o);
  if (r.forgotten) return viewOf(r.state, o.nowMs);
  if (!r.state) throw new StateNotFoundError(target.key);
  const holder = viewOf(r.state, o.nowMs);
  // Ended by this clock, but within the grace: the holder's clock may be behind, and it may still be running.
  const held = leaseLive(r.state, o.nowMs)
    ? `a live lease holds ${target.key} (${describeHolder(holder)})`
    : `the lease of ${target.key} ended ${formatDuration(-(holder.leaseLeftMs ?? 0))} ago by this clock ` +
      `(${describeHolder(holder)}), but its holder's clock may be behind`;
  throw new StateRefusedError(
    target.key,
    r.state,
    `refused: ${held}; a lease holds until ${o.clockSkewMs} ms after its end (--clock-skew-ms): wait ` +
      `${formatDuration(forgetWaitMs(r.state, o))}, release it first (eonce state release ` +
      `${target.subject ?? target.key} --fence ${r.state.fence}), or add --force if its holder is gone`,
  );
}
