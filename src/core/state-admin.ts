import { OptionsError } from "./errors.js";
import { boolean, integer, required, resolveOptions, schemaFor } from "./options.js";
import { leaseExpired, type StateRecord, type StateStatus } from "./state.js";
import { stateKeyOfInlineRow } from "./state-key.js";
import type { StateStore } from "./store.js";

/**
 * What an operator needs of a state store beyond the guard's contract (src/core/store.ts): list the records, and
 * delete one so that its next delivery runs again. `eonce state` is built on it; each engine implements it next to
 * its store (`src/engines/<engine>/admin.ts`, inline state in `inline-admin.ts`, the memory store's in
 * `src/engines/memory/admin.ts`). Reads and the conditional release go through the store itself
 * (`store.read`, `store.release`), so an operator's release is the very step the guard takes.
 */
export interface StateAdmin {
  /** The engine's name (src/engines/registry.ts), as the store's. */
  readonly engine: string;
  readonly store: StateStore;
  /**
   * Records matching `query`, in `compareForAdmin` order, at most `query.limit`. Listed records carry no `result`
   * (`store.read` has it). DynamoDB scans the whole table (no index orders it); the SQL engines sort and limit.
   */
  list(query: StateQuery): Promise<StateRecord[]>;
  /**
   * Deletes the record of `key` in one conditional request, refused while a lease may still hold it by its holder's
   * clock (forgetRefused: status running, lease ending after forgetLeaseBoundMs), unless `force`. The fence is not
   * reused after a deletion: claims take their fences from the clock.
   */
  forget(key: string, options: ForgetOptions): Promise<ForgetResult>;
  /** Ends the connection (client, pool or file). */
  close(): Promise<void>;
}

/**
 * What every engine's admin shares: the store it goes through (reads and the operator's release are the store's own
 * steps, so they are the guard's), and the engine's name, which is the store's.
 */
export abstract class StoreAdmin<S extends StateStore> implements StateAdmin {
  readonly store: S;

  constructor(store: S) {
    this.store = store;
  }

  get engine(): S["engine"] {
    return this.store.engine;
  }

  /** The records `query` asks for, as StateAdmin's `list` says. */
  abstract list(query: StateQuery): Promise<StateRecord[]>;
  /** Deletes the record of `key` unless a lease may still hold it, as StateAdmin's `forget` says. */
  abstract forget(key: string, options: ForgetOptions): Promise<ForgetResult>;
  /** Ends the connection (client, pool or file). */
  abstract close(): Promise<void>;
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

/** A lease that still holds at `nowMs` by the reader's clock (what `get` and `list` show). */
export function leaseLive(state: StateRecord, nowMs: number): boolean {
  return state.status === "running" && (state.leaseUntilMs ?? 0) > nowMs;
}

/** How `forget` decides on a running record. */
export interface ForgetOptions {
  /** The operator's clock (epoch ms). */
  nowMs: number;
  /**
   * The most that the operator's clock may run ahead of the holder's. A lease counts as ended only this long after
   * its end, as the guard waits before a takeover (src/core/state.ts leaseExpired), so an operator whose clock is
   * ahead never forgets a claim its holder still treats as live. Default FORGET_CLOCK_SKEW_MS.
   */
  clockSkewMs?: number;
  /** Delete whatever the lease says: for an operator who knows the holder is gone. Default false. */
  force?: boolean;
}

/**
 * The guard's default clockSkewMs (min(1000, leaseMs / 10), src/core/guard-options.ts) for its default lease, and the largest
 * it is for any lease. A guard configured with a larger clockSkewMs needs the same value here.
 */
export const FORGET_CLOCK_SKEW_MS = 1000;

export const FORGET_OPTIONS = schemaFor<ForgetOptions>()({
  nowMs: required(integer({ min: 0 })),
  clockSkewMs: integer({
    min: 0,
    default: FORGET_CLOCK_SKEW_MS,
    doc: "the most the clocks of this machine and the holder may differ: a lease holds this long after its end",
  }),
  force: boolean({
    default: false,
    doc: "delete even while a lease holds the record (its holder is known gone)",
  }),
});

/** Checks the options eagerly (an OptionsError) and fills the defaults. */
export function resolveForgetOptions(options: ForgetOptions): Required<ForgetOptions> {
  return resolveOptions("forget", FORGET_OPTIONS, options);
}

/**
 * Whether `forget` refuses `state`: a running record whose lease has not ended for a claimer on the operator's
 * clock — the guard's own takeover rule (leaseExpired: lease + grace < now), with clockSkewMs as the grace — unless
 * `force`. The one check of every engine's admin: the SQLite and memory admins call it; the DynamoDB and PostgreSQL
 * admins run it inside their conditional delete as `lease > forgetLeaseBoundMs(options)`.
 */
export function forgetRefused(state: StateRecord, options: ForgetOptions): boolean {
  const o = resolveForgetOptions(options);
  if (o.force || state.status !== "running") return false;
  return !leaseExpired(state, { nowMs: o.nowMs, leaseGraceMs: o.clockSkewMs });
}

/**
 * forgetRefused as a bound on the (integer) lease end, for a condition a store evaluates: refused exactly when
 * `status = running AND lease > bound` (a missing lease counts as 0). `force` gives a bound no lease reaches.
 */
export function forgetLeaseBoundMs(options: ForgetOptions): number {
  const o = resolveForgetOptions(options);
  if (o.force) return Number.MAX_SAFE_INTEGER;
  // lease + grace < now  <=>  lease < now - grace  <=>  lease <= ceil(now - grace) - 1
  return Math.ceil(o.nowMs - o.clockSkewMs) - 1;
}

/** How long until `forget` of `state` is no longer refused (0: it is not). */
export function forgetWaitMs(state: StateRecord, options: ForgetOptions): number {
  if (!forgetRefused(state, options)) return 0;
  const o = resolveForgetOptions(options);
  // The least whole wait after which lease + grace < now + wait.
  return Math.floor((state.leaseUntilMs ?? 0) + o.clockSkewMs - o.nowMs) + 1;
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

/**
 * The fence below which a record's last claim was before `query.claimedBeforeMs` (the filter, as the engines run
 * it: on fences, which they store and index); undefined when the query sets no such filter.
 */
export function claimedBeforeFence(query: StateQuery): number | undefined {
  return query.claimedBeforeMs === undefined ? undefined : Math.floor(query.claimedBeforeMs) * 1000;
}

/**
 * `list` for an engine that reads the records and decides here (memory; Valkey's SCAN; DynamoDB's Scan, filtered
 * on the server already): those of `records` that `query` asks for, in compareForAdmin order, at most `query.limit`.
 */
export function listFrom(records: readonly StateRecord[], query: StateQuery): StateRecord[] {
  const before = claimedBeforeFence(query);
  return records
    .filter(
      (r) =>
        (query.status === undefined || r.status === query.status) &&
        (before === undefined || r.fence < before),
    )
    .sort((a, b) => compareForAdmin(a, b, query.nowMs))
    .slice(0, query.limit);
}

/** How an inline admin maps the rows it lists back to state keys: the store's `rowKey` and, for a custom one, its inverse. */
export interface InlineRowMapping {
  /** The store's custom row of a state key; default inlineRowKey (src/core/state-key.ts). */
  rowKey?: (stateKey: string) => string;
  /**
   * `rowKey`'s inverse (row → state key), for `list`. Needed with a custom `rowKey` only: without it `list` names
   * each record by its row (`key` holds the row), since a custom mapping may have no inverse to guess.
   */
  stateKeyOfRow?: (row: string) => string;
}

/**
 * The state key of a listed row for an inline admin (`engine` names it in errors): the default mapping's inverse,
 * a custom `stateKeyOfRow` checked against `rowKeyOf` on every row (an inverse that is not one would list records under
 * keys that `get` does not find), or, for a custom `rowKey` without one, the row itself.
 */
export function inlineKeyOfRow(
  engine: string,
  mapping: InlineRowMapping,
  rowKeyOf: (stateKey: string) => string,
): (row: string) => string {
  const inverse = mapping.stateKeyOfRow;
  if (inverse !== undefined && typeof inverse !== "function")
    throw new OptionsError(`${engine}: stateKeyOfRow must be a function`);
  if (mapping.rowKey === undefined) {
    if (inverse) throw new OptionsError(`${engine}: stateKeyOfRow is rowKey's inverse: give rowKey too`);
    return stateKeyOfInlineRow;
  }
  if (!inverse) return (row) => row;
  return (row) => {
    const key = inverse(row);
    const back = typeof key === "string" && key.length > 0 ? rowKeyOf(key) : undefined;
    if (back !== row)
      throw new OptionsError(
        `${engine}: stateKeyOfRow is not rowKey's inverse: row ${JSON.stringify(row)} → key ` +
          `${JSON.stringify(key)} → row ${JSON.stringify(back)}`,
      );
    return key as string;
  };
}
