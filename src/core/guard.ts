import type { AtomicWrite, StateStore, WriteOutcome } from "../stores/contract.js";
import {
  LeaseLostError,
  OptionsError,
  ResultSerializationError,
  UnsupportedAtomicWriteError,
} from "./errors.js";
import { rejectUnknownKeys, requireOneOf, requirePositiveInteger } from "./options.js";
import type { Position } from "./position.js";
import { type ClaimRequest, classifyRefusal, type StateRecord, UNORDERED_POSITION } from "./state.js";
import { stateKey } from "./state-key.js";

/**
 * The guard: claim → run the handler under a lease (renewed by heartbeats) → commit, or release on failure.
 * The protocol and its state machine are documented in state.ts; outcomes below.
 */

export type BusyPolicy = "wait" | "retry" | "supersede";
export type InFlightPolicy = "wait" | "retry";

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
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
  /** Called on every guard step, for logs and metrics (see src/observe). */
  onEvent?: (event: GuardTrace) => void;
}

/** What the guard needs to know of an event. */
export interface GuardedEvent {
  /** What order and exclusivity are scoped to, e.g. `bucket/key` or an order id. */
  subject: string;
  /** What makes two deliveries the same event, unique within the subject. */
  identity: string;
  /** Order within the subject; absent: deduplicate only. */
  position?: Position;
}

export interface RunOptions {
  /** Epoch ms by which waiting must give up (e.g. Lambda deadline minus a margin). Default now + leaseMs. */
  deadlineMs?: number;
  /** Aborts the handler from outside (e.g. the Lambda is about to time out). */
  signal?: AbortSignal;
}

export interface GuardContext {
  /** Aborted when the lease is lost (renewal refused) or the outer signal aborts. */
  signal: AbortSignal;
  fence: number;
  position: Position | undefined;
  /** 1 on the first claim of this event, 2 after one failed or crashed run, … */
  attempt: number;
  subject: string;
  identity: string;
  stateKey: string;
  /** Applies `write` atomically with the commit (one request), where the store can fold it. */
  atCommit(write: AtomicWrite): void;
}

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
    }
  | { status: "duplicate"; result: R | undefined }
  | { status: "stale"; position: Position | undefined; current: Position }
  | { status: "busy"; holder: Position }
  | { status: "in-flight" }
  /** The handler ran, but its claim was taken over meanwhile: nothing was committed by this run. */
  | { status: "lease-lost"; reason: "superseded" | "expired"; current?: StateRecord }
  /** The handler threw; the claim was released (unless the lease was lost meanwhile). */
  | { status: "failed"; error: unknown; released: boolean };

export type GuardOutcomeStatus = GuardOutcome<unknown>["status"];

export type GuardTrace =
  | {
      type: "claimed";
      key: string;
      fence: number;
      attempt: number;
      superseded?: Position;
      tookOver?: boolean;
    }
  | { type: "waiting"; key: string; reason: "busy" | "in-flight"; delayMs: number }
  | { type: "heartbeat"; key: string; fence: number; ok: boolean }
  | { type: "outcome"; key: string; status: GuardOutcomeStatus; durationMs: number };

export type GuardHandler<R> = (ctx: GuardContext) => Promise<R>;

/** What `apply`'s compute function gets: no lease, no signal; fence 0 (the one request returns no fence). */
export type ApplyContext = Pick<
  GuardContext,
  "position" | "subject" | "identity" | "stateKey" | "fence" | "atCommit"
>;

export interface Guard {
  readonly options: Readonly<Required<Omit<GuardOptions, "onEvent">>>;
  /** Claim, run the handler under a lease, commit: for handlers with any kind of effect. New event: 2 requests. */
  run<R>(event: GuardedEvent, handler: GuardHandler<R>, options?: RunOptions): Promise<GuardOutcome<R>>;
  /**
   * One request per event, for handlers whose only effects are atomic writes (`ctx.atCommit`): `compute` runs first,
   * then claim, effects and commit go in one conditional request. `compute` must have no other side effect — it also
   * runs for a duplicate or stale delivery, whose writes are then never applied. New event with effects: 1 request.
   */
  apply<R>(
    event: GuardedEvent,
    compute: (ctx: ApplyContext) => R | Promise<R>,
    options?: RunOptions,
  ): Promise<GuardOutcome<R>>;
}

/** The guard options a wrapper passes through (the rest, `now` and `onEvent`, are the wrapper's own). */
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
] as const;

const GUARD_KEYS = [...GUARD_PASS_THROUGH_KEYS, "now", "onEvent"] as const;

export function createGuard(options: GuardOptions): Guard {
  rejectUnknownKeys("createGuard", options, GUARD_KEYS);
  if (!options.store || typeof options.store.claim !== "function") {
    throw new OptionsError("createGuard: store is required");
  }
  const leaseMs = requirePositiveInteger("createGuard", "leaseMs", options.leaseMs ?? 30_000);
  const heartbeatMs = requirePositiveInteger(
    "createGuard",
    "heartbeatMs",
    options.heartbeatMs ?? Math.floor(leaseMs / 3),
  );
  if (heartbeatMs >= leaseMs) {
    throw new OptionsError(`createGuard: heartbeatMs (${heartbeatMs}) must be below leaseMs (${leaseMs})`);
  }
  const opts = {
    store: options.store,
    leaseMs,
    heartbeatMs,
    busy: requireOneOf("createGuard", "busy", options.busy ?? "wait", [
      "wait",
      "retry",
      "supersede",
    ] as const),
    inFlight: requireOneOf("createGuard", "inFlight", options.inFlight ?? "wait", ["wait", "retry"] as const),
    expiresAfterSeconds: requirePositiveInteger(
      "createGuard",
      "expiresAfterSeconds",
      options.expiresAfterSeconds ?? 7 * 24 * 3600,
    ),
    waitIntervalMs: requirePositiveInteger("createGuard", "waitIntervalMs", options.waitIntervalMs ?? 50),
    maxWaitIntervalMs: requirePositiveInteger(
      "createGuard",
      "maxWaitIntervalMs",
      options.maxWaitIntervalMs ?? 1000,
    ),
    storeResult: options.storeResult ?? true,
    now: options.now ?? Date.now,
  };
  if (opts.expiresAfterSeconds * 1000 <= leaseMs) {
    throw new OptionsError(
      "createGuard: expiresAfterSeconds must outlast leaseMs, or fences could be reused",
    );
  }
  const trace = options.onEvent ?? (() => {});
  return {
    options: opts,
    run: (event, handler, runOptions) => run(opts, trace, event, handler, runOptions ?? {}),
    apply: (event, compute, runOptions) => apply(opts, trace, event, compute, runOptions ?? {}),
  };
}

type Resolved = Guard["options"];

async function run<R>(
  o: Resolved,
  trace: (e: GuardTrace) => void,
  event: GuardedEvent,
  handler: GuardHandler<R>,
  runOptions: RunOptions,
): Promise<GuardOutcome<R>> {
  const started = o.now();
  const ordered = event.position !== undefined;
  const key = stateKey(event.subject, event.identity, ordered);
  const position = event.position ?? UNORDERED_POSITION;
  const deadlineMs = runOptions.deadlineMs ?? started + o.leaseMs;
  const done = (outcome: GuardOutcome<R>): GuardOutcome<R> => {
    trace({ type: "outcome", key, status: outcome.status, durationMs: o.now() - started });
    return outcome;
  };

  // Claim, waiting with back-off while busy or in flight if the policy says so.
  const acquired = await acquire(o, trace, key, event, runOptions, deadlineMs, (req) => o.store.claim(req));
  if (!acquired.ok) return done(acquired.outcome as GuardOutcome<R>);
  const claimed = acquired.value;
  const claimedAtMs = acquired.req.nowMs;

  // The old state says whose claim this was: a live holder (we superseded it) or an expired one (took over).
  const previous = claimed.previous;
  const heldBefore = previous?.status === "running";
  const liveBefore = heldBefore && (previous.leaseUntilMs ?? 0) >= claimedAtMs;
  const superseded = liveBefore ? previous.position : undefined;
  const tookOver = heldBefore && !liveBefore;
  const nowAtClaim = o.now();
  trace({ type: "claimed", key, fence: claimed.fence, attempt: claimed.attempt, superseded, tookOver });

  // Run the handler under heartbeats; a refused renewal aborts it.
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(runOptions.signal?.reason);
  runOptions.signal?.addEventListener("abort", onOuterAbort, { once: true });
  // The outer signal may have aborted while the claim was in flight: no event will come for that.
  if (runOptions.signal?.aborted) controller.abort(runOptions.signal.reason);
  const writes: AtomicWrite[] = [];
  const ctx: GuardContext = {
    signal: controller.signal,
    fence: claimed.fence,
    position: event.position,
    attempt: claimed.attempt,
    subject: event.subject,
    identity: event.identity,
    stateKey: key,
    atCommit(write) {
      if (!o.store.canFold(write)) {
        throw new UnsupportedAtomicWriteError(
          `the ${o.store.engine} store cannot fold a ${write.engine} write`,
        );
      }
      writes.push(write);
    },
  };
  let leaseUntilMs = nowAtClaim + o.leaseMs;
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = renewing.then(async () => {
      if (controller.signal.aborted) return;
      const next = o.now() + o.leaseMs;
      let ok: boolean;
      try {
        ok = await o.store.renew({ key, fence: claimed.fence, leaseUntilMs: next });
      } catch {
        // A transient store error: keep running while the lease we hold is still valid.
        ok = o.now() < leaseUntilMs;
      }
      if (ok) leaseUntilMs = Math.max(leaseUntilMs, next);
      trace({ type: "heartbeat", key, fence: claimed.fence, ok });
      if (!ok) controller.abort(new LeaseLostError(key, claimed.fence));
    });
  }, o.heartbeatMs);

  let result: R;
  let serialized: string | undefined;
  try {
    result = await handler(ctx);
    // Serialized here so that an unserializable result fails (and releases) like a throwing handler.
    serialized = o.storeResult ? serializeResult(result) : undefined;
  } catch (error) {
    clearInterval(timer);
    await renewing;
    let released = false;
    try {
      released = await o.store.release({ key, fence: claimed.fence });
    } catch {
      // The lease expires anyway; the redelivery claims after it.
    }
    return done({ status: "failed", error, released });
  } finally {
    clearInterval(timer);
    runOptions.signal?.removeEventListener("abort", onOuterAbort);
  }
  await renewing;

  const now = o.now();
  const commit = await o.store.commit({
    key,
    fence: claimed.fence,
    identity: event.identity,
    result: serialized,
    expiresAtSeconds: Math.ceil(now / 1000) + o.expiresAfterSeconds,
    writes,
  });
  if (!commit.committed) {
    const current = commit.state;
    const reason =
      current && current.identity !== event.identity && current.position > position
        ? "superseded"
        : "expired";
    return done({ status: "lease-lost", reason, current });
  }
  return done({
    status: "processed",
    result,
    fence: claimed.fence,
    attempt: claimed.attempt,
    writes: commit.writes,
    ...(superseded !== undefined ? { superseded } : {}),
    ...(tookOver ? { tookOver } : {}),
  });
}

async function apply<R>(
  o: Resolved,
  trace: (e: GuardTrace) => void,
  event: GuardedEvent,
  compute: (ctx: ApplyContext) => R | Promise<R>,
  runOptions: RunOptions,
): Promise<GuardOutcome<R>> {
  const started = o.now();
  const key = stateKey(event.subject, event.identity, event.position !== undefined);
  const done = (outcome: GuardOutcome<R>): GuardOutcome<R> => {
    trace({ type: "outcome", key, status: outcome.status, durationMs: o.now() - started });
    return outcome;
  };
  const writes: AtomicWrite[] = [];
  const ctx: ApplyContext = {
    position: event.position,
    subject: event.subject,
    identity: event.identity,
    stateKey: key,
    fence: 0,
    atCommit(write) {
      if (!o.store.canFold(write)) {
        throw new UnsupportedAtomicWriteError(
          `the ${o.store.engine} store cannot fold a ${write.engine} write`,
        );
      }
      writes.push(write);
    },
  };
  let result: R;
  let serialized: string | undefined;
  try {
    result = await compute(ctx);
    serialized = o.storeResult ? serializeResult(result) : undefined;
  } catch (error) {
    return done({ status: "failed", error, released: false }); // nothing was claimed
  }
  const acquired = await acquire(
    o,
    trace,
    key,
    event,
    runOptions,
    runOptions.deadlineMs ?? started + o.leaseMs,
    (req) =>
      o.store.claimAndCommit({
        ...req,
        expiresAtSeconds: Math.ceil(req.nowMs / 1000) + o.expiresAfterSeconds,
        result: serialized,
        writes,
      }),
  );
  if (!acquired.ok) return done(acquired.outcome as GuardOutcome<R>);
  trace({ type: "claimed", key, fence: 0, attempt: 1 });
  return done({ status: "processed", result, fence: 0, attempt: 1, writes: acquired.value.writes });
}

type Attempt<T> = { claimed: true } & T;

/**
 * Tries `attempt` (a claim, or a one-request apply) until it succeeds or the refusal is final: duplicate, stale,
 * or busy / in flight under the `retry` policy or past the deadline. `wait` backs off with jitter.
 */
async function acquire<T extends object>(
  o: Resolved,
  trace: (e: GuardTrace) => void,
  key: string,
  event: GuardedEvent,
  runOptions: RunOptions,
  deadlineMs: number,
  attempt: (req: ClaimRequest) => Promise<Attempt<T> | { claimed: false; state: StateRecord }>,
): Promise<{ ok: true; value: Attempt<T>; req: ClaimRequest } | { ok: false; outcome: GuardOutcome<never> }> {
  let delayMs = o.waitIntervalMs;
  for (;;) {
    const now = o.now();
    const req: ClaimRequest = {
      key,
      position: event.position ?? UNORDERED_POSITION,
      identity: event.identity,
      nowMs: now,
      leaseUntilMs: now + o.leaseMs,
      expiresAtSeconds: Math.ceil((now + o.leaseMs) / 1000) + o.expiresAfterSeconds,
      supersede: o.busy === "supersede",
    };
    const result = await attempt(req);
    if (result.claimed) return { ok: true, value: result, req };
    const refusal = classifyRefusal(result.state, req);
    if (!refusal) continue; // the state changed between the write and the read (GetItem fallback): try again
    if (refusal.kind === "duplicate") {
      return {
        ok: false,
        outcome: { status: "duplicate", result: parseResult<never>(refusal.state.result) },
      };
    }
    if (refusal.kind === "stale") {
      return { ok: false, outcome: { status: "stale", position: event.position, current: refusal.current } };
    }
    const policy = refusal.kind === "busy" ? o.busy : o.inFlight;
    const remainingMs = deadlineMs - o.now();
    if (policy !== "wait" || remainingMs <= 0 || runOptions.signal?.aborted) {
      const outcome: GuardOutcome<never> =
        refusal.kind === "busy"
          ? { status: "busy", holder: refusal.state.position }
          : { status: "in-flight" };
      return { ok: false, outcome };
    }
    // Jittered back-off, but never past the deadline (one last try there) nor much past the holder's lease
    // expiry: a crashed holder frees the subject then.
    const untilLeaseMs = (refusal.state.leaseUntilMs ?? Number.POSITIVE_INFINITY) - o.now() + 1;
    const sleepMs = Math.max(
      1,
      Math.min(Math.round(delayMs * (0.5 + Math.random() / 2)), remainingMs, untilLeaseMs),
    );
    trace({ type: "waiting", key, reason: refusal.kind, delayMs: sleepMs });
    await sleep(sleepMs, runOptions.signal);
    delayMs = Math.min(delayMs * 2, o.maxWaitIntervalMs);
  }
}

function serializeResult(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  try {
    return JSON.stringify(result);
  } catch (cause) {
    throw new ResultSerializationError(
      "the handler's result is not JSON-serializable (or set storeResult: false)",
      {
        cause,
      },
    );
  }
}

function parseResult<R>(json: string | undefined): R | undefined {
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json) as R;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
