import { type Publish, publisher } from "../outbox/publish.js";
import { acquire, type NotAcquired } from "./acquire.js";
import { type EffectKeyScope, effectKey } from "./effect-key.js";
import { StoreError, UnsupportedAtomicWriteError } from "./errors.js";
import { type GuardOptions, type ResolvedGuardOptions, resolveGuardOptions } from "./guard-options.js";
import type {
  ApplyContext,
  GuardContext,
  GuardedEvent,
  GuardHandler,
  GuardOutcome,
  GuardTrace,
  RunOptions,
} from "./guard-types.js";
import { holdLease } from "./lease.js";
import { assertPosition, type Position, positionBefore } from "./position.js";
import { parseResult, type StoredResult, serializeResult } from "./result.js";
import { type ClaimRequest, describeClaim, type StateRecord, UNORDERED_POSITION } from "./state.js";
import { stateKey } from "./state-key.js";
import type { AtomicWrite, ClaimAndCommitResult } from "./store.js";

/**
 * The guard: acquire (claim) → hold the lease (heartbeats) while the handler runs → commit, or release on failure.
 * `run` and `apply` share the phases (the options are in guard-options.ts, the
 * types in guard-types.ts); the protocol and its state machine are in state.ts, the outcomes and which
 * of them are acknowledged in outcomes.ts, the failure model in docs/architecture.md.
 */

export {
  type BusyPolicy,
  GUARD_OPTIONS,
  GUARD_PASS_THROUGH_KEYS,
  GUARD_PASS_THROUGH_OPTIONS,
  type GuardOptions,
  type GuardPassThroughKey,
  type InFlightPolicy,
  type ResolvedGuardOptions,
  resolveGuardOptions,
} from "./guard-options.js";
export type * from "./guard-types.js";
export type { GuardOutcomeStatus } from "./outcomes.js";

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

/** Tries of a commit or release whose outcome the store did not confirm, before giving up (`unconfirmed`). */
const SEND_TRIES = 4;

type Resolved = ResolvedGuardOptions;

/** A guard over `options.store`; the options are checked now (`OptionsError`). */
export function createGuard(options: GuardOptions): Guard {
  const opts = resolveGuardOptions("createGuard", options);
  const trace = options.onEvent;
  return {
    options: opts,
    run: (event, handler, runOptions = {}) =>
      run(opts, callTrace(trace, runOptions), event, handler, runOptions),
    apply: (event, compute, runOptions = {}) =>
      apply(opts, callTrace(trace, runOptions), event, compute, runOptions),
  };
}

type Trace = (e: GuardTrace) => void;

const noTrace: Trace = () => {};

/** The guard's hook, then the call's own (either alone when the other is absent, as for a wrapper's guard). */
function callTrace(trace: Trace | undefined, runOptions: RunOptions): Trace {
  const own = runOptions.onEvent;
  if (!own) return trace ?? noTrace;
  if (!trace) return own;
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

/** The run's `publish`: its messages fold into `writes`, ordered by the commit's fence. */
function publishFor(
  o: Resolved,
  event: GuardedEvent,
  key: string,
  fence: number,
  writes: AtomicWrite[],
): Publish {
  return publisher(o.outbox, {
    subject: event.subject,
    identity: event.identity,
    stateKey: key,
    fence,
    nowMs: () => o.clock.now(),
    atCommit: atCommitFor(o, writes),
  });
}

/** The event's effect keys: of its subject and identity only, so that every claim of it gives the same. */
function effectKeyFor(event: GuardedEvent): (name: string) => string {
  const scope: EffectKeyScope = { kind: "event", subject: event.subject, identity: event.identity };
  return (name) => effectKey(scope, name);
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
    effectKey: effectKeyFor(event),
    publish: publishFor(o, event, key, fence, writes),
  };
  try {
    const result = await handler(ctx);
    // Serialized here so that an unserializable result fails (and releases) like a throwing handler.
    return { result, stored: serializeResult(result, o.storeResult, o.maxStoredResultBytes), writes };
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
  const answered = await sendUntilAnswered(o, () =>
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
  if (!answered.ok) {
    if (answered.retryable) return { status: "unconfirmed", phase: "commit", error: answered.error };
    return release<R>(o, claim.key, claim.fence, event, answered.error);
  }
  const commit = answered.value;
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
    computer.claim,
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
      effectKey: effectKeyFor(event),
      publish: publishFor(o, event, this.key, fence, writes),
    };
    try {
      const result = await this.compute(ctx);
      this.computed = {
        fence,
        result,
        stored: serializeResult(result, o.storeResult, o.maxStoredResultBytes),
        writes,
      };
      return this.computed;
    } catch (error) {
      throw new ComputeFailed(error);
    }
  }

  /** One claim-and-commit request for `req`'s fence (an arrow: `acquire` calls it unbound). */
  readonly claim = async (req: ClaimRequest): Promise<ClaimAndCommitResult> => {
    const { o, event } = this;
    const c = await this.computeFor(req.fence);
    try {
      return await o.store.claimAndCommit({
        ...req,
        expiresAtSeconds: Math.ceil(req.nowMs / 1000) + o.expiresAfterSeconds,
        result: c.stored.json,
        ...(c.stored.omittedBytes !== undefined ? { resultOmittedBytes: c.stored.omittedBytes } : {}),
        ...(event.fingerprint !== undefined ? { fingerprint: event.fingerprint } : {}),
        writes: c.writes,
      });
    } catch (error) {
      this.unanswered = true;
      throw error;
    }
  };
}

/** Releases the claim after the handler failed (or its commit was refused for good). */
async function release<R>(
  o: Resolved,
  key: string,
  fence: number,
  event: GuardedEvent,
  error: unknown,
): Promise<GuardOutcome<R>> {
  const answered = await sendUntilAnswered(o, () => o.store.release({ key, fence }));
  if (!answered.ok) return { status: "failed", error, released: false }; // it frees at lease expiry
  if (answered.value.ok) return { status: "failed", error, released: true };
  return refusedBy<R>(answered.value.state, fence, event) ?? { status: "failed", error, released: false };
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
 * Sends a commit or release until the store answers, up to SEND_TRIES with back-off. The store recognises its
 * own landed attempt, so a retry after a lost response is answered as done.
 */
async function sendUntilAnswered<T>(
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
      if (!retryable || tries >= SEND_TRIES) {
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
