import type { StateAdmin } from "../../core/state-admin.js";
import { stateKey } from "../../core/state-key.js";
import { StateNotFoundError, StateRefusedError } from "./errors.js";
import type { StateListOptions } from "./options.js";
import { describeHolder, type StateView, viewOf } from "./view.js";

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

/** Deletes the record unless a live lease holds it; returns the record as it was. */
export async function forgetState(admin: StateAdmin, target: StateTarget, nowMs: number): Promise<StateView> {
  const r = await admin.forget(target.key, nowMs);
  if (r.forgotten) return viewOf(r.state, nowMs);
  if (!r.state) throw new StateNotFoundError(target.key);
  const holder = viewOf(r.state, nowMs);
  throw new StateRefusedError(
    target.key,
    r.state,
    `refused: a live lease holds ${target.key} (${describeHolder(holder)}); wait for it to end, or release it ` +
      `first (eonce state release ${target.subject ?? target.key} --fence ${r.state.fence})`,
  );
}
