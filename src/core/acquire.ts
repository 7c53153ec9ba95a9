import { randomBytes } from "node:crypto";
import type { Clock } from "./clock.js";
import { StoreError } from "./errors.js";
import type { ResolvedGuardOptions } from "./guard-options.js";
import type { Position } from "./position.js";
import { type ClaimRequest, classifyRefusal, type StateRecord, UNORDERED_POSITION } from "./state.js";

/** What acquiring needs of the guard's resolved options. */
export type AcquireOptions = Pick<
  ResolvedGuardOptions,
  | "clock"
  | "leaseMs"
  | "clockSkewMs"
  | "expiresAfterSeconds"
  | "busy"
  | "inFlight"
  | "waitIntervalMs"
  | "maxWaitIntervalMs"
>;

export type WaitTrace = { reason: "busy" | "in-flight" | "store-error" | "changed"; delayMs: number };

/** Why acquiring ended without a claim. */
export type NotAcquired =
  | { kind: "duplicate"; state: StateRecord }
  | { kind: "stale"; current: Position }
  | { kind: "busy"; holder: Position }
  | { kind: "in-flight" }
  /** The store failed on every try until the deadline, or for good (`retryable: false`). */
  | { kind: "store-error"; error: unknown };

type Attempt<T> = ({ claimed: true } & T) | { claimed: false; state: StateRecord };

/** Immediate retries after a fence refusal (another claim in the same microsecond, or a clock behind). */
const MAX_FENCE_RETRIES = 3;

/**
 * Fences start from the clock, in microseconds, so that an item deleted (by TTL, at least a lease after its last
 * write) never hands out an old fence again. The sub-millisecond digits are random: two claimers of one deleted
 * item within the same millisecond still differ (999 times in 1000), and a living item refuses any repeat anyway.
 */
export function clockFence(nowMs: number, random: number): number {
  return Math.floor(nowMs) * 1000 + Math.floor(random * 1000);
}

/** The clock's random number (seeded in simulations), else Math.random. */
function randomOf(clock: Clock): number {
  return clock.random?.() ?? Math.random();
}

/**
 * A token unique to one guard call, written by its claim (see src/core/state.ts). Fresh random bytes each time (a
 * pool would be ~7 µs cheaper, but a process restored twice from one snapshot would hand out the same tokens).
 */
export function claimToken(): string {
  return randomBytes(12).toString("base64url");
}

/**
 * Tries `attempt` (a claim, or apply's claim-and-commit) until it succeeds or the refusal is final: duplicate, stale,
 * or busy / in flight under the `retry` policy or past the deadline. Every loop backs off and checks the deadline
 * and the signal: waiting for a holder, a store error (the same token is sent again, so a claim that landed is
 * recognised), or a state that changed between the write and its read.
 */
export async function acquire<T extends object>(
  o: AcquireOptions,
  target: ClaimTarget,
  deadlineMs: number,
  signal: AbortSignal | undefined,
  attempt: (req: ClaimRequest) => Promise<Attempt<T>>,
  onWait: (w: WaitTrace) => void,
): Promise<Acquired<T>> {
  const token = claimToken();
  const fences = { floor: 0, retries: 0 };
  let delayMs = o.waitIntervalMs;
  for (;;) {
    const now = o.clock.now();
    const fence = Math.max(clockFence(now, randomOf(o.clock)), fences.floor);
    const req = claimRequest(o, target, now, fence, token);
    const step = await tryOnce(o, req, deadlineMs, signal, attempt, fences);
    if (step.kind === "done") return step.result;
    if (step.kind === "again") continue;
    const remainingMs = deadlineMs - o.clock.now();
    if (remainingMs <= 0 || signal?.aborted) {
      // Out of time on a loop that is not a policy wait: the last refusal said "try again", so say busy/unknown.
      const error = new StoreError(`claim of ${target.key} got no definite answer before the deadline`);
      return { ok: false, why: { kind: "store-error", error } };
    }
    // Jittered back-off, never past the deadline (one last try there).
    const sleepMs = Math.max(
      1,
      Math.min(Math.round(delayMs * (0.5 + randomOf(o.clock) / 2)), remainingMs, step.untilMs),
    );
    onWait({ reason: step.reason, delayMs: sleepMs });
    await o.clock.sleep(sleepMs, signal);
    delayMs = Math.min(delayMs * 2, o.maxWaitIntervalMs);
  }
}

type ClaimTarget = { key: string; position: Position | undefined; identity: string };
type Acquired<T> =
  | { ok: true; value: { claimed: true } & T; req: ClaimRequest }
  | { ok: false; why: NotAcquired };
/** One try's verdict: final, try again at once (a fence refusal), or wait (at most `untilMs`) and try again. */
type Step<T> =
  | { kind: "done"; result: Acquired<T> }
  | { kind: "again" }
  | { kind: "wait"; reason: WaitTrace["reason"]; untilMs: number };

function claimRequest(
  o: AcquireOptions,
  target: ClaimTarget,
  now: number,
  fence: number,
  token: string,
): ClaimRequest {
  return {
    key: target.key,
    position: target.position ?? UNORDERED_POSITION,
    identity: target.identity,
    nowMs: now,
    leaseUntilMs: now + o.leaseMs,
    expiresAtSeconds: Math.ceil((now + o.leaseMs) / 1000) + o.expiresAfterSeconds,
    supersede: o.busy === "supersede",
    fence,
    token,
    leaseGraceMs: o.clockSkewMs,
  };
}

async function tryOnce<T extends object>(
  o: AcquireOptions,
  req: ClaimRequest,
  deadlineMs: number,
  signal: AbortSignal | undefined,
  attempt: (req: ClaimRequest) => Promise<Attempt<T>>,
  fences: { floor: number; retries: number },
): Promise<Step<T>> {
  let result: Attempt<T>;
  try {
    result = await attempt(req);
  } catch (error) {
    if (!(error instanceof StoreError) || !error.retryable || outOfTime(o.clock, deadlineMs, signal)) {
      return notAcquired({ kind: "store-error", error });
    }
    return { kind: "wait", reason: "store-error", untilMs: Number.POSITIVE_INFINITY };
  }
  if (result.claimed) return { kind: "done", result: { ok: true, value: result, req } };
  const refusal = classifyRefusal(result.state, req);
  if (refusal === undefined) {
    // Claimable after all: the item changed between the write and the read.
    return { kind: "wait", reason: "changed", untilMs: Number.POSITIVE_INFINITY };
  }
  switch (refusal.kind) {
    case "duplicate":
      return notAcquired({ kind: "duplicate", state: refusal.state });
    case "stale":
      return notAcquired({ kind: "stale", current: refusal.current });
    case "fence":
      fences.floor = refusal.state.fence + 1;
      if (++fences.retries <= MAX_FENCE_RETRIES) return { kind: "again" };
      return { kind: "wait", reason: "changed", untilMs: Number.POSITIVE_INFINITY };
  }
  const policy = refusal.kind === "busy" ? o.busy : o.inFlight;
  const final: NotAcquired =
    refusal.kind === "busy" ? { kind: "busy", holder: refusal.state.position } : { kind: "in-flight" };
  if (policy !== "wait" || outOfTime(o.clock, deadlineMs, signal)) return notAcquired(final);
  // Not much past the holder's lease end: a crashed holder frees the subject then.
  const untilMs =
    (refusal.state.leaseUntilMs ?? Number.POSITIVE_INFINITY) + o.clockSkewMs + 1 - o.clock.now();
  return { kind: "wait", reason: refusal.kind, untilMs };
}

function outOfTime(clock: Clock, deadlineMs: number, signal: AbortSignal | undefined): boolean {
  return deadlineMs - clock.now() <= 0 || signal?.aborted === true;
}

function notAcquired<T>(why: NotAcquired): Step<T> {
  return { kind: "done", result: { ok: false, why } };
}
