import { acquire, type NotAcquired } from "./acquire.js";
import { type Clock, clockReading, systemClock } from "./clock.js";
import { StoreError, UnsupportedAtomicWriteError } from "./errors.js";
import { holdLease } from "./lease.js";
import {
  boolean,
  custom,
  func,
  integer,
  oneOf,
  optionsRule,
  required,
  resolveOptions,
  schemaFor,
} from "./options.js";
import type { GuardOutcomeStatus } from "./outcomes.js";
import { assertPosition, type Position, positionBefore } from "./position.js";
import { parseResult, type StoredResult, storeResult } from "./result.js";
import { describeClaim, type StateRecord, UNORDERED_POSITION } from "./state.js";
import { stateKey } from "./state-key.js";
import type { AtomicWrite, StateStore, WriteOutcome } from "./store.js";

/**
 * The guard: acquire (claim) → hold the lease (heartbeats) while the handler runs → commit, or release on failure.
 * `run` and `apply` share the phases; the protocol and its state machine are in state.ts, the outcomes and which
 * of them are acknowledged in outcomes.ts, the failure model in docs/architecture.md.
 */

export type BusyPolicy = "wait" | "retry" | "supersede";
/**
 * What a claim does when the same event is running elsewhere: `wait` for it, or `retry` (end `in-flight`, for
 * a later redelivery).
 */
export type InFlightPolicy = "wait" | "retry";
export type { GuardOutcomeStatus } from "./outcomes.js";

/** The options of `createGuard`; unknown keys and bad values throw `OptionsError`. */
export interface GuardOptions {
  store: StateStore;
  /** How long a claim holds without a heartbeat. Default 30 000. */
  leaseMs?: number;
  /** Renewal interval while the handler runs; must be below leaseMs. Default leaseMs / 3. */
  heartbeatMs?: number;
  /** An older event of the subject is running: wait for it, fail for a later redelivery, or take over. Default `wait`. */
  busy?: BusyPolicy;
  /** The same event is running elsewhere: wait or fail for a later redelivery. Default `wait`. */
  inFlight?: InFlightPolicy;
  /** How long committed state (and its replayable result) is kept. Default 7 days. */
  expiresAfterSeconds?: number;
  /** First back-off while waiting; doubles up to maxWaitIntervalMs, with jitter. Default 50. */
  waitIntervalMs?: number;
  maxWaitIntervalMs?: number;
  /** Store the handler's result (JSON) for replay to duplicates. Default true. */
  storeResult?: boolean;
  /** Results larger than this (UTF-8 bytes of JSON) are not stored; the outcome says so. Default: the store's limit. */
  maxStoredResultBytes?: number;
  /**
   * The most that two workers' clocks may differ. A lease is taken over only this long after it ended by the
   * claimer's clock, so a live, heartbeating holder is never taken over while clocks agree within it.
   * Default min(1000, leaseMs / 10).
   */
  clockSkewMs?: number;
  /** Clock reading, for tests (sleeps stay real). Default Date.now. */
  now?: () => number;
  /** Clock and sleep, for simulations on virtual time. Default the system clock. */
  clock?: Clock;
  /** Called on every guard step, for logs and metrics (see src/observe). */
  onEvent?: (event: GuardTrace) => void;
}

/** What the guard needs to know of an event. */
export interface GuardedEvent {
  /** What order and exclusivity are scoped to, e.g. `bucket/key` or an order id. */
  subject: string;
  /** What makes two deliveries the same event, unique within the subject. */
  identity: string;
  /** Order within the subject (printable ASCII, see position.ts); absent: deduplicate only. */
  position?: Position;
  /**
   * A digest of the event's payload (opt-in). Kept with the commit; a later delivery of the same identity with
   * another fingerprint is a `conflict` (the same idempotency key reused for different content), not a duplicate.
   */
  fingerprint?: string;
}

/** Per-call options of `guard.run` and `guard.apply`. */
export interface RunOptions {
  /** Epoch ms by which waiting must give up (e.g. Lambda deadline minus a margin). Default now + leaseMs. */
  deadlineMs?: number;
  /** Aborts the handler from outside (e.g. the Lambda is about to time out). */
  signal?: AbortSignal;
  /** Called on this call's steps, after the guard's `onEvent`: a caller observes each event on one shared guard. */
  onEvent?: (event: GuardTrace) => void;
}

/** What a handler under `guard.run` gets: the claim it holds and the writes to fold into its commit. */
export interface GuardContext {
  /** Aborted when the lease is lost or cannot be confirmed, or the outer signal aborts. */
  signal: AbortSignal;
  fence: number;
  position: Position | undefined;
  /** 1 on the first claim of this event, 2 after one failed or crashed run, … (consecutive claims of it). */
  attempt: number;
  subject: string;
  identity: string;
  stateKey: string;
  /** Applies `write` atomically with the commit (one request), where the store can fold it. */
  atCommit(write: AtomicWrite): void;
}

/**
 * How one `guard.run` or `guard.apply` ended; `status` says whether the delivery is acknowledged (see
 * `isAcknowledged`).
 */
export type GuardOutcome<R> =
  | {
      status: "processed";
      result: R;
      fence: number;
      attempt: number;
      writes: WriteOutcome[];
      /** The claim was taken from a live holder of an older position (busy policy `supersede`). */
      superseded?: Position;
      /** The claim was taken from a holder whose lease had expired (crashed or frozen run). */
      tookOver?: boolean;
      /** The result was too large to store (its size in bytes): duplicates will get no result. */
      resultOmittedBytes?: number;
    }
  | { status: "duplicate"; result: R | undefined; resultOmittedBytes?: number }
  /** The same identity was committed with another payload fingerprint: nothing ran; not acknowledged. */
  | { status: "conflict"; fingerprint: string; committedFingerprint: string }
  | { status: "stale"; position: Position | undefined; current: Position }
  | { status: "busy"; holder: Position }
  | { status: "in-flight" }
  /** The handler ran, but another claim holds a newer fence: nothing was committed by this run; that holder will. */
  | { status: "lease-lost"; reason: "superseded" | "expired"; current?: StateRecord }
  /** The handler threw (or the store refused its commit for good); the claim was released where possible. */
  | { status: "failed"; error: unknown; released: boolean }
  /** The store did not confirm the claim, lease or commit (an outage): the delivery must be retried. */
  | { status: "unconfirmed"; phase: "claim" | "commit" | "release"; error: unknown };

/** One step of the guard (claimed, waiting, committed, …), given to `onEvent` for logs, metrics and tests. */
export type GuardTrace =
  | {
      type: "claimed";
      key: string;
      fence: number;
      attempt: number;
      superseded?: Position;
      tookOver?: boolean;
    }
  | {
      type: "waiting";
      key: string;
      reason: "busy" | "in-flight" | "store-error" | "changed";
      delayMs: number;
    }
  | { type: "heartbeat"; key: string; fence: number; ok: boolean; error?: unknown }
  | { type: "outcome"; key: string; status: GuardOutcomeStatus; durationMs: number };

/**
 * The handler `guard.run` runs while it holds the claim; its result is committed and replayed to duplicates.
 */
export type GuardHandler<R> = (ctx: GuardContext) => Promise<R>;

/** What `apply`'s compute function gets: no lease, no signal; the fence its one request will take. */
export type ApplyContext = Pick<
  GuardContext,
  "position" | "subject" | "identity" | "stateKey" | "fence" | "atCommit"
>;

/** Exactly-once, in-order processing of events over one state store (`createGuard`). */
export interface Guard {
  readonly options: Readonly<Resolved>;
  /** Claim, run the handler under a lease, commit: for handlers with any kind of effect. New event: 2 requests. */
  run<R>(event: GuardedEvent, handler: GuardHandler<R>, options?: RunOptions): Promise<GuardOutcome<R>>;
  /**
   * One request per event, for handlers whose only effects are atomic writes (`ctx.atCommit`): `compute` runs first,
   * then claim, effects and commit go in one conditional request. `compute` must have no other side effect — it also
   * runs for a duplicate or stale delivery, whose writes are then never applied, and again when the request is
   * retried with another fence. What `compute` throws is never retried (docs/guard.md): `failed`, or `unconfirmed`
   * when an earlier request of the call went unanswered. New event with effects: 1 request.
   */
  apply<R>(
    event: GuardedEvent,
    compute: (ctx: ApplyContext) => R | Promise<R>,
    options?: RunOptions,
  ): Promise<GuardOutcome<R>>;
}

/** The guard options a wrapper passes through (not `now`, `clock`, `onEvent`: it observes each call's `onEvent`). */
export const GUARD_PASS_THROUGH_KEYS = [
  "store",
  "leaseMs",
  "heartbeatMs",
  "busy",
  "inFlight",
  "expiresAfterSeconds",
  "waitIntervalMs",
  "maxWaitIntervalMs",
  "storeResult",
  "maxStoredResultBytes",
  "clockSkewMs",
] as const;

/** The guard's options, field by field (defaults that depend on other options are filled in by resolveGuardOptions). */
export const GUARD_OPTIONS = schemaFor<GuardOptions>()({
  store: required(
    custom<StateStore>(
      "a state store (see src/core/store.ts)",
      (v) => typeof (v as StateStore | null)?.claim === "function",
    ),
  ),
  leaseMs: integer({ min: 1, default: 30_000, doc: "how long a claim holds without a heartbeat" }),
  heartbeatMs: integer({ min: 1, doc: "renewal interval while the handler runs (default leaseMs / 3)" }),
  busy: oneOf(["wait", "retry", "supersede"], {
    default: "wait",
    doc: "an older event of the subject is running",
  }),
  inFlight: oneOf(["wait", "retry"], { default: "wait", doc: "the same event is running elsewhere" }),
  expiresAfterSeconds: integer({
    min: 1,
    default: 7 * 24 * 3600,
    doc: "how long committed state is kept",
  }),
  waitIntervalMs: integer({ min: 1, default: 50, doc: "first back-off while waiting" }),
  maxWaitIntervalMs: integer({ min: 1, default: 1000, doc: "longest back-off while waiting" }),
  storeResult: boolean({ default: true }),
  maxStoredResultBytes: integer({ min: 1 }),
  clockSkewMs: integer({
    min: 0,
    doc: "the most that workers' clocks may differ (default min(1000, leaseMs / 10))",
  }),
  now: func<() => number>(),
  clock: custom<Clock>("a Clock (see src/core/clock.ts)", (v) => typeof v === "object" && v !== null),
  onEvent: func<(event: GuardTrace) => void>(),
});

/** Tries of a commit or release whose outcome the store did not confirm, before giving up (`unconfirmed`). */
const SETTLE_TRIES = 4;

export interface ResolvedGuardOptions {
  store: StateStore;
  leaseMs: number;
  heartbeatMs: number;
  busy: BusyPolicy;
  inFlight: InFlightPolicy;
  expiresAfterSeconds: number;
  waitIntervalMs: number;
  maxWaitIntervalMs: number;
  storeResult: boolean;
  maxStoredResultBytes: number;
  clockSkewMs: number;
  clock: Clock;
}
type Resolved = ResolvedGuardOptions;

/** Validates eagerly and fills the defaults; the rules that relate options are checked here. */
export function resolveGuardOptions(what: string, options: GuardOptions): Resolved {
  const o = resolveOptions(what, GUARD_OPTIONS, options);
  const leaseMs = o.leaseMs;
  const heartbeatMs = o.heartbeatMs ?? Math.floor(leaseMs / 3);
  optionsRule(what, heartbeatMs < leaseMs, `heartbeatMs (${heartbeatMs}) must be below leaseMs (${leaseMs})`);
  const clockSkewMs = o.clockSkewMs ?? Math.min(1000, Math.floor(leaseMs / 10));
  const storeLimit = o.store.maxResultBytes;
  optionsRule(
    what,
    Number.isSafeInteger(storeLimit) && storeLimit > 0,
    "the store must declare maxResultBytes (see src/core/store.ts)",
  );
  const maxStoredResultBytes = o.maxStoredResultBytes ?? storeLimit;
  optionsRule(
    what,
    maxStoredResultBytes <= storeLimit,
    `maxStoredResultBytes (${maxStoredResultBytes}) exceeds the ${o.store.engine} store's limit (${storeLimit})`,
  );
  optionsRule(what, o.now === undefined || o.clock === undefined, "give now or clock, not both");
  // Renewals keep the item's expiry ahead of the lease; this keeps a claim that is never renewed safe too.
  optionsRule(
    what,
    o.expiresAfterSeconds * 1000 > leaseMs + clockSkewMs,
    "expiresAfterSeconds must outlast leaseMs + clockSkewMs",
  );
  return {
    store: o.store,
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
    clock: o.clock ?? (o.now ? clockReading(o.now) : systemClock),
  };
}

/** A guard over `options.store`; the options are checked now (`OptionsError`). */
export function createGuard(options: GuardOptions): Guard {
  const opts = resolveGuardOptions("createGuard", options);
  const trace = options.onEvent ?? (() => {});
  return {
    options: opts,
    run: (event, handler, runOptions = {}) =>
      run(opts, callTrace(trace, runOptions), event, handler, runOptions),
    apply: (event, compute, runOptions = {}) =>
      apply(opts, callTrace(trace, runOptions), event, compute, runOptions),
  };
}

type Trace = (e: GuardTrace) => void;

/** The guard's hook, then the call's own. */
function callTrace(trace: Trace, runOptions: RunOptions): Trace {
  const own = runOptions.onEvent;
  if (!own) return trace;
  return (e) => {
    trace(e);
    own(e);
  };
}

/** The state key, after checking the position orders alike in every store. */
function keyOf(event: GuardedEvent): string {
  if (event.position !== undefined) assertPosition(event.position);
  return stateKey(event.subject, event.identity, event.position !== undefined);
}

function finisher<R>(o: Resolved, trace: Trace, key: string) {
  const started = o.clock.now();
  return (outcome: GuardOutcome<R>): GuardOutcome<R> => {
    trace({ type: "outcome", key, status: outcome.status, durationMs: o.clock.now() - started });
    return outcome;
  };
}

function atCommitFor(o: Resolved, writes: AtomicWrite[]): (write: AtomicWrite) => void {
  return (write) => {
    if (!o.store.canFold(write)) {
      throw new UnsupportedAtomicWriteError(
        `the ${o.store.engine} store cannot fold a ${write.engine} write`,
      );
    }
    writes.push(write);
  };
}

async function run<R>(
  o: Resolved,
  trace: Trace,
  event: GuardedEvent,
  handler: GuardHandler<R>,
  runOptions: RunOptions,
): Promise<GuardOutcome<R>> {
  const key = keyOf(event);
  const done = finisher<R>(o, trace, key);

  // 1. Acquire: claim, waiting with back-off while busy or in flight if the policy says so.
  const acquired = await acquire(
    o,
    { key, position: event.position, identity: event.identity },
    runOptions.deadlineMs ?? o.clock.now() + o.leaseMs,
    runOptions.signal,
    (req) => o.store.claim(req),
    (w) => trace({ type: "waiting", key, ...w }),
  );
  if (!acquired.ok) return done(notAcquired<R>(acquired.why, event, "claim"));
  const claim: Claim = { key, ...acquired.value, how: describeClaim(acquired.value.previous, acquired.req) };
  trace({ type: "claimed", key, fence: claim.fence, attempt: claim.attempt, ...claim.how });

  // 2. Lease and 3. execute; 4. commit (or release, when the store refuses the commit for good).
  const executed = await execute(o, trace, event, claim, handler, runOptions.signal);
  if ("status" in executed) return done(executed);
  return done(await commitRun(o, event, claim, executed));
}

/** A claim `run` holds: its state key, fence, attempt and lease end, and how it came about. */
interface Claim {
  key: string;
  fence: number;
  attempt: number;
  leaseUntilMs: number;
  how: { superseded?: Position; tookOver?: true };
}

interface Executed<R> {
  result: R;
  stored: StoredResult;
  writes: AtomicWrite[];
}

/** Runs the handler under the lease (heartbeats until it returns); a throw releases the claim. */
async function execute<R>(
  o: Resolved,
  trace: Trace,
  event: GuardedEvent,
  claim: Claim,
  handler: GuardHandler<R>,
  signal: AbortSignal | undefined,
): Promise<Executed<R> | GuardOutcome<R>> {
  const { key, fence } = claim;
  const lease = holdLease(o, key, fence, claim.leaseUntilMs, signal, (h) =>
    trace({ type: "heartbeat", key, fence, ...h }),
  );
  const writes: AtomicWrite[] = [];
  const ctx: GuardContext = {
    signal: lease.signal,
    fence,
    position: event.position,
    attempt: claim.attempt,
    subject: event.subject,
    identity: event.identity,
    stateKey: key,
    atCommit: atCommitFor(o, writes),
  };
  try {
    const result = await handler(ctx);
    // Serialized here so that an unserializable result fails (and releases) like a throwing handler.
    return { result, stored: storeResult(result, o.storeResult, o.maxStoredResultBytes), writes };
  } catch (error) {
    lease.stop();
    return release<R>(o, key, fence, event, error);
  } finally {
    lease.stop();
  }
}

/** Commits the handler's result and effects; a refusal says who holds the subject now. */
async function commitRun<R>(
  o: Resolved,
  event: GuardedEvent,
  claim: Claim,
  { result, stored, writes }: Executed<R>,
): Promise<GuardOutcome<R>> {
  const omitted = stored.omittedBytes !== undefined ? { resultOmittedBytes: stored.omittedBytes } : {};
  const settled = await settle(o, () =>
    o.store.commit({
      key: claim.key,
      fence: claim.fence,
      identity: event.identity,
      result: stored.json,
      ...omitted,
      ...(event.fingerprint !== undefined ? { fingerprint: event.fingerprint } : {}),
      expiresAtSeconds: Math.ceil(o.clock.now() / 1000) + o.expiresAfterSeconds,
      writes,
    }),
  );
  if (!settled.ok) {
    if (settled.retryable) return { status: "unconfirmed", phase: "commit", error: settled.error };
    return release<R>(o, claim.key, claim.fence, event, settled.error);
  }
  const commit = settled.value;
  if (!commit.committed) {
    const gone = new StoreError(
      "the commit was refused but no newer claim holds the subject (the item is gone)",
    );
    return (
      refusedBy<R>(commit.state, claim.fence, event) ?? {
        status: "unconfirmed",
        phase: "commit",
        error: gone,
      }
    );
  }
  return {
    status: "processed",
    result,
    fence: claim.fence,
    attempt: claim.attempt,
    writes: commit.writes,
    ...claim.how,
    ...omitted,
  };
}

async function apply<R>(
  o: Resolved,
  trace: Trace,
  event: GuardedEvent,
  compute: (ctx: ApplyContext) => R | Promise<R>,
  runOptions: RunOptions,
): Promise<GuardOutcome<R>> {
  const key = keyOf(event);
  const done = finisher<R>(o, trace, key);
  const computer = new FenceComputer(o, event, key, compute);
  const acquired = await acquire(
    o,
    { key, position: event.position, identity: event.identity },
    runOptions.deadlineMs ?? o.clock.now() + o.leaseMs,
    runOptions.signal,
    async (req) => {
      const c = await computer.computeFor(req.fence);
      return computer.send(() =>
        o.store.claimAndCommit({
          ...req,
          expiresAtSeconds: Math.ceil(req.nowMs / 1000) + o.expiresAfterSeconds,
          result: c.stored.json,
          ...(c.stored.omittedBytes !== undefined ? { resultOmittedBytes: c.stored.omittedBytes } : {}),
          ...(event.fingerprint !== undefined ? { fingerprint: event.fingerprint } : {}),
          writes: c.writes,
        }),
      );
    },
    (w) => trace({ type: "waiting", key, ...w }),
  );
  if (!acquired.ok && acquired.why.kind === "store-error" && acquired.why.error instanceof ComputeFailed) {
    const { error } = acquired.why.error;
    // An earlier request of this call went unanswered and may have landed: its outcome is not known.
    if (computer.unanswered) return done({ status: "unconfirmed", phase: "claim", error });
    return done({ status: "failed", error, released: false }); // nothing claimed
  }
  if (!acquired.ok) return done(notAcquired<R>(acquired.why, event, "claim"));
  const c = computer.computed as Computed<R>;
  trace({ type: "claimed", key, fence: c.fence, attempt: 1 });
  return done({
    status: "processed",
    result: c.result,
    fence: c.fence,
    attempt: 1,
    writes: acquired.value.writes,
    ...(c.stored.omittedBytes !== undefined ? { resultOmittedBytes: c.stored.omittedBytes } : {}),
  });
}

interface Computed<R> extends Executed<R> {
  fence: number;
}

/**
 * What `apply`'s compute threw, whatever it is: the user's error, never retried as the guard's own store errors are
 * (a retryable `StoreError` from a store the compute read is the user's too). Not a `StoreError`, so `acquire` ends
 * at once; `apply` unwraps it.
 */
class ComputeFailed {
  constructor(readonly error: unknown) {}
}

/**
 * `apply`'s compute, run for the fence its request takes (again only when a retry takes another fence), and its
 * requests. A class, not closures: `apply` makes one per event.
 */
class FenceComputer<R> {
  computed: Computed<R> | undefined;
  /** A request of this call threw: it may have landed (a lost response). */
  unanswered = false;

  constructor(
    private readonly o: Resolved,
    private readonly event: GuardedEvent,
    private readonly key: string,
    private readonly compute: (ctx: ApplyContext) => R | Promise<R>,
  ) {}

  /** Computes for `fence`; what the compute (or its result's serialization) throws becomes a `ComputeFailed`. */
  async computeFor(fence: number): Promise<Computed<R>> {
    if (this.computed?.fence === fence) return this.computed;
    const { o, event } = this;
    const writes: AtomicWrite[] = [];
    const ctx: ApplyContext = {
      position: event.position,
      subject: event.subject,
      identity: event.identity,
      stateKey: this.key,
      fence,
      atCommit: atCommitFor(o, writes),
    };
    try {
      const result = await this.compute(ctx);
      this.computed = {
        fence,
        result,
        stored: storeResult(result, o.storeResult, o.maxStoredResultBytes),
        writes,
      };
      return this.computed;
    } catch (error) {
      throw new ComputeFailed(error);
    }
  }

  async send<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      this.unanswered = true;
      throw error;
    }
  }
}

/** Releases the claim after the handler failed (or its commit was refused for good). */
async function release<R>(
  o: Resolved,
  key: string,
  fence: number,
  event: GuardedEvent,
  error: unknown,
): Promise<GuardOutcome<R>> {
  const settled = await settle(o, () => o.store.release({ key, fence }));
  if (!settled.ok) return { status: "failed", error, released: false }; // it frees at lease expiry
  if (settled.value.ok) return { status: "failed", error, released: true };
  return refusedBy<R>(settled.value.state, fence, event) ?? { status: "failed", error, released: false };
}

/**
 * A commit or release refused by the store because another claim with a newer fence holds the subject. When that
 * claim is for this event or a newer position, its holder commits (or retries) work that covers this event, so this
 * delivery is done (`lease-lost`, acknowledged). When an OLDER event took the expired claim over, its commit will not
 * cover this one: `busy`, retried. Nobody holding it (the item is gone): undefined, for the caller to report as not
 * acknowledged.
 */
function refusedBy<R>(
  current: StateRecord | undefined,
  fence: number,
  event: GuardedEvent,
): GuardOutcome<R> | undefined {
  if (!current || current.fence <= fence) return undefined;
  const position = event.position ?? UNORDERED_POSITION;
  if (current.identity !== event.identity && positionBefore(current.position, position)) {
    return { status: "busy", holder: current.position };
  }
  const superseded = current.identity !== event.identity && positionBefore(position, current.position);
  return { status: "lease-lost", reason: superseded ? "superseded" : "expired", current };
}

/**
 * Sends a commit or release until the store answers, up to SETTLE_TRIES with back-off. The store recognises its
 * own landed attempt, so a retry after a lost response is answered as done.
 */
async function settle<T>(
  o: Resolved,
  send: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown; retryable: boolean }> {
  let delayMs = o.waitIntervalMs;
  for (let tries = 1; ; tries++) {
    try {
      return { ok: true, value: await send() };
    } catch (error) {
      // Anything but a retryable store error is a bug or a request the store refuses for good: give the claim up.
      const retryable = error instanceof StoreError && error.retryable;
      if (!retryable || tries >= SETTLE_TRIES) {
        return { ok: false, error, retryable };
      }
      await o.clock.sleep(delayMs);
      delayMs = Math.min(delayMs * 2, o.maxWaitIntervalMs);
    }
  }
}

function notAcquired<R>(why: NotAcquired, event: GuardedEvent, phase: "claim"): GuardOutcome<R> {
  switch (why.kind) {
    case "duplicate": {
      const committed = why.state.committedFingerprint;
      if (event.fingerprint !== undefined && committed !== undefined && committed !== event.fingerprint) {
        return { status: "conflict", fingerprint: event.fingerprint, committedFingerprint: committed };
      }
      const omitted = why.state.resultOmittedBytes;
      return {
        status: "duplicate",
        result: parseResult<R>(why.state.result),
        ...(omitted !== undefined ? { resultOmittedBytes: omitted } : {}),
      };
    }
    case "stale":
      return { status: "stale", position: event.position, current: why.current };
    case "busy":
      return { status: "busy", holder: why.holder };
    case "in-flight":
      return { status: "in-flight" };
    case "store-error": {
      const retryable = !(why.error instanceof StoreError) || why.error.retryable;
      if (why.error instanceof StoreError && retryable)
        return { status: "unconfirmed", phase, error: why.error };
      if (why.error instanceof StoreError) return { status: "failed", error: why.error, released: false };
      throw why.error; // not a store failure: a bug or bad input, for the caller to route
    }
  }
}
