import type { StateRecord, StateStatus } from "./state.js";
import type { StateStore } from "./store.js";

/**
 * What an operator needs of a state store beyond the guard's contract (src/core/store.ts): list the records, and
 * delete one so that its next delivery runs again. `eonce state` is built on it; each engine implements it next to
 * its store (`src/stores/<engine>/admin.ts`, inline state in `inline-admin.ts`). Reads and the conditional release go through the store itself
 * (`store.read`, `store.release`), so an operator's release is the very step the guard takes.
 */
export interface StateAdmin {
  /** The engine's short name, as the store's (`dynamodb`, `dynamodb-inline`, `postgres`, `postgres-inline`, `sqlite`). */
  readonly engine: string;
  readonly store: StateStore;
  /**
   * Records matching `query`, in `compareForAdmin` order, at most `query.limit`. Listed records carry no `result`
   * (`store.read` has it). DynamoDB scans the whole table (no index orders it); the SQL engines sort and limit.
   */
  list(query: StateQuery): Promise<StateRecord[]>;
  /**
   * Deletes the record of `key` in one conditional request, refused while a live lease holds it (status running,
   * lease ending after `nowMs`). The fence is not reused after a deletion: claims take their fences from the clock.
   */
  forget(key: string, nowMs: number): Promise<ForgetResult>;
  /** Ends the connection (client, pool or file). */
  close(): Promise<void>;
}

export interface StateQuery {
  status?: StateStatus;
  /** Only records whose last claim was before this time (epoch ms, from the fence: see claimedAtMs). */
  claimedBeforeMs?: number;
  limit: number;
  /** Whose clock decides which leases have expired (the order's first group). */
  nowMs: number;
}

/** `forgotten`: the record that was deleted. Else the record that holds (a live lease), or undefined: none. */
export type ForgetResult =
  | { forgotten: true; state: StateRecord }
  | { forgotten: false; state?: StateRecord };

/** A lease that still holds at `nowMs`: no claim may take the record, and `forget` refuses it. */
export function leaseLive(state: StateRecord, nowMs: number): boolean {
  return state.status === "running" && (state.leaseUntilMs ?? 0) > nowMs;
}

/**
 * The group a record lists in, held or stuck first: 0 running with an expired lease (a crashed holder: the
 * subject waits for a redelivery), 1 running, 2 released (failed, waiting for a redelivery), 3 done.
 */
export function adminRank(state: StateRecord, nowMs: number): number {
  if (state.status === "running") return leaseLive(state, nowMs) ? 1 : 0;
  return state.status === "released" ? 2 : 3;
}

/** The list order: by group (adminRank), then oldest claim first (lowest fence), then key. */
export function compareForAdmin(a: StateRecord, b: StateRecord, nowMs: number): number {
  return (
    adminRank(a, nowMs) - adminRank(b, nowMs) ||
    a.fence - b.fence ||
    (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  );
}

/** Fences from 2001 on, in microseconds: smaller ones were not taken from a clock (see below). */
const CLOCK_FENCE_FLOOR = 978_307_200_000_000;

/**
 * When the record's last claim was taken (epoch ms), read from its fence: the guard takes fences from its clock in
 * microseconds (src/core/acquire.ts clockFence; a fence refusal adds 1). Undefined for fences not from a clock.
 */
export function claimedAtMs(fence: number): number | undefined {
  return fence >= CLOCK_FENCE_FLOOR ? Math.floor(fence / 1000) : undefined;
}

/** The fence below which a record's last claim was before `ms` (the `claimedBeforeMs` filter, as the engines run it). */
export function fenceAt(ms: number): number {
  return Math.floor(ms) * 1000;
}
