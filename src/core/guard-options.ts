import type { Outbox } from "../outbox/types.js";
import { type Clock, clockReading, systemClock } from "./clock.js";
import type { GuardTrace } from "./guard-types.js";
import * as opt from "./options.js";
import type { StateStore } from "./store.js";

/**
 * The guard's options, declared once: each field below is the option's type (inferred: `GuardOptions`), its
 * validation and default (`resolveOptions`), its CLI help (`doc`) and, in its doc comment, its API reference. The
 * wrappers take the pass-through fields as they are (src/lambda/options.ts spreads them into their own schema).
 */

const BUSY_POLICIES = ["wait", "retry", "supersede"] as const;
const IN_FLIGHT_POLICIES = ["wait", "retry"] as const;
/** What a claim does when an older event of the subject is running: `wait`, `retry` later, or `supersede` it. */
export type BusyPolicy = (typeof BUSY_POLICIES)[number];
/**
 * What a claim does when the same event is running elsewhere: `wait` for it, or `retry` (end `in-flight`, for
 * a later redelivery).
 */
export type InFlightPolicy = (typeof IN_FLIGHT_POLICIES)[number];

/** The guard options a wrapper passes through (not `now`, `clock`, `onEvent`: it observes each call's `onEvent`). */
export const GUARD_PASS_THROUGH_OPTIONS = {
  /** The state store: where claims, leases and commits live (see src/core/store.ts). */
  store: opt.required(
    opt.custom<StateStore>(
      "a state store (see src/core/store.ts)",
      (v) => typeof (v as StateStore | null)?.claim === "function",
    ),
  ),
  /**
   * Where `ctx.publish` puts messages: an outbox of the store's engine (its entries fold into the commit; a relay
   * sends them after it: docs/effects.md). Without one, `ctx.publish` throws.
   */
  outbox: opt.custom<Outbox>(
    "an outbox of the store's engine (see src/outbox/types.ts)",
    (v) => typeof (v as Outbox | null)?.entryWrite === "function",
  ),
  /** How long a claim holds without a heartbeat. Default 30 000. */
  leaseMs: opt.integer({ min: 1, default: 30_000, doc: "how long a claim holds without a heartbeat" }),
  /** Renewal interval while the handler runs; must be below leaseMs. Default leaseMs / 3. */
  heartbeatMs: opt.integer({ min: 1, doc: "renewal interval while the handler runs (default leaseMs / 3)" }),
  /** An older event of the subject is running: wait for it, fail for a later redelivery, or take over. Default `wait`. */
  busy: opt.oneOf(BUSY_POLICIES, {
    default: "wait",
    doc: "an older event of the subject is running",
  }),
  /** The same event is running elsewhere: wait or fail for a later redelivery. Default `wait`. */
  inFlight: opt.oneOf(IN_FLIGHT_POLICIES, {
    default: "wait",
    doc: "the same event is running elsewhere",
  }),
  /** How long committed state (and its replayable result) is kept. Default 7 days. */
  expiresAfterSeconds: opt.integer({
    min: 1,
    default: 7 * 24 * 3600,
    doc: "how long committed state is kept",
  }),
  /** First back-off while waiting; doubles up to maxWaitIntervalMs, with jitter. Default 50. */
  waitIntervalMs: opt.integer({ min: 1, default: 50, doc: "first back-off while waiting" }),
  /** Longest back-off while waiting. Default 1 000. */
  maxWaitIntervalMs: opt.integer({ min: 1, default: 1000, doc: "longest back-off while waiting" }),
  /** Store the handler's result (JSON) for replay to duplicates. Default true. */
  storeResult: opt.boolean({ default: true }),
  /** Results larger than this (UTF-8 bytes of JSON) are not stored; the outcome says so. Default: the store's limit. */
  maxStoredResultBytes: opt.integer({ min: 1 }),
  /**
   * The most that two workers' clocks may differ. A lease is taken over only this long after it ended by the
   * claimer's clock, so a live, heartbeating holder is never taken over while clocks agree within it.
   * Default min(1000, leaseMs / 10).
   */
  clockSkewMs: opt.integer({
    min: 0,
    doc: "the most that workers' clocks may differ (default min(1000, leaseMs / 10))",
  }),
};

/** The guard's options, field by field (defaults that depend on other options are filled in by resolveGuardOptions). */
export const GUARD_OPTIONS = {
  ...GUARD_PASS_THROUGH_OPTIONS,
  /** Clock reading, for tests (sleeps stay real). Default Date.now. */
  now: opt.func<() => number>(),
  /** Clock and sleep, for simulations on virtual time. Default the system clock. */
  clock: opt.custom<Clock>("a Clock (see src/core/clock.ts)", (v) => typeof v === "object" && v !== null),
  /** Called on every guard step, for logs and metrics (see src/observe). */
  onEvent: opt.func<(event: GuardTrace) => void>(),
};

/** The names of the pass-through options, from their schema. */
export type GuardPassThroughKey = keyof typeof GUARD_PASS_THROUGH_OPTIONS;
export const GUARD_PASS_THROUGH_KEYS = Object.keys(GUARD_PASS_THROUGH_OPTIONS) as GuardPassThroughKey[];

/** The options of `createGuard`; unknown keys and bad values throw `OptionsError`. */
export interface GuardOptions extends opt.InputOf<typeof GUARD_OPTIONS> {}

/** The guard's options after validation: every pass-through option filled in, and one clock. */
export type ResolvedGuardOptions = {
  [K in Exclude<GuardPassThroughKey, "outbox">]-?: NonNullable<
    opt.Resolved<typeof GUARD_PASS_THROUGH_OPTIONS>[K]
  >;
} & { clock: Clock; outbox: Outbox | undefined };

/** Validates eagerly and fills the defaults; the rules that relate options are checked here. */
export function resolveGuardOptions(what: string, options: GuardOptions): ResolvedGuardOptions {
  const o = opt.resolveOptions(what, GUARD_OPTIONS, options);
  const { now, clock } = o;
  const leaseMs = o.leaseMs;
  const heartbeatMs = o.heartbeatMs ?? Math.floor(leaseMs / 3);
  opt.optionsRule(
    what,
    heartbeatMs < leaseMs,
    `heartbeatMs (${heartbeatMs}) must be below leaseMs (${leaseMs})`,
  );
  const clockSkewMs = o.clockSkewMs ?? Math.min(1000, Math.floor(leaseMs / 10));
  const storeLimit = o.store.maxResultBytes;
  opt.optionsRule(
    what,
    Number.isSafeInteger(storeLimit) && storeLimit > 0,
    "the store must declare maxResultBytes (see src/core/store.ts)",
  );
  const maxStoredResultBytes = o.maxStoredResultBytes ?? storeLimit;
  opt.optionsRule(
    what,
    maxStoredResultBytes <= storeLimit,
    `maxStoredResultBytes (${maxStoredResultBytes}) exceeds the ${o.store.engine} store's limit (${storeLimit})`,
  );
  opt.optionsRule(what, now === undefined || clock === undefined, "give now or clock, not both");
  opt.optionsRule(
    what,
    o.outbox === undefined || o.outbox.engine === o.store.engine,
    `the outbox is a ${o.outbox?.engine} outbox; the store's engine is ${o.store.engine}`,
  );
  // Renewals keep the item's expiry ahead of the lease; this keeps a claim that is never renewed safe too.
  opt.optionsRule(
    what,
    o.expiresAfterSeconds * 1000 > leaseMs + clockSkewMs,
    "expiresAfterSeconds must outlast leaseMs + clockSkewMs",
  );
  // A literal, not a spread of `o`: one fixed shape for the object every guard step reads.
  return {
    store: o.store,
    outbox: o.outbox,
    leaseMs,
    heartbeatMs,
    busy: o.busy,
    inFlight: o.inFlight,
    expiresAfterSeconds: o.expiresAfterSeconds,
    waitIntervalMs: o.waitIntervalMs,
    maxWaitIntervalMs: o.maxWaitIntervalMs,
    storeResult: o.storeResult,
    maxStoredResultBytes,
    clockSkewMs,
    clock: clock ?? (now ? clockReading(now) : systemClock),
  };
}
