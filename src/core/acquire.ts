import { randomBytes } from "node:crypto";
import type { Clock } from "./clock.js";
import { StoreError } from "./errors.js";
import type { Position } from "./position.js";
import { type ClaimRequest, classifyRefusal, type StateRecord, UNORDERED_POSITION } from "./state.js";

/** What acquiring needs of the guard's resolved options. */
export interface AcquireOptions {
  clock: Clock;
  leaseMs: number;
  clockSkewMs: number;
  expiresAfterSeconds: number;
  busy: "wait" | "retry" | "supersede";
  inFlight: "wait" | "retry";
  waitIntervalMs: number;
  maxWaitIntervalMs: number;
}

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
export function clockFence(nowMs: number, random: () => number): number {
  return Math.floor(nowMs) * 1000 + Math.floor(random() * 1000);
}

/** A token unique to one guard call, written by its claim (see src/core/state.ts). */
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
  target: { key: string; position: Position | undefined; identity: string },
  deadlineMs: number,
  signal: AbortSignal | undefined,
  attempt: (req: ClaimRequest) => Promise<Attempt<T>>,
  onWait: (w: WaitTrace) => void,
): Promise<{ ok: true; value: { claimed: true } & T; req: ClaimRequest } | { ok: false; why: NotAcquired }> {
  const token = claimToken();
  const random = () => o.clock.random?.() ?? Math.random();
  let delayMs = o.waitIntervalMs;
  let fenceFloor = 0;
  let fenceRetries = 0;
  for (;;) {
    const now = o.clock.now();
    const req: ClaimRequest = {
      key: target.key,
      position: target.position ?? UNORDERED_POSITION,
      identity: target.identity,
      nowMs: now,
      leaseUntilMs: now + o.leaseMs,
      expiresAtSeconds: Math.ceil((now + o.leaseMs) / 1000) + o.expiresAfterSeconds,
      supersede: o.busy === "supersede",
      fence: Math.max(clockFence(now, random), fenceFloor),
      token,
      leaseGraceMs: o.clockSkewMs,
    };
    let waitReason: WaitTrace["reason"];
    let untilMs = Number.POSITIVE_INFINITY;
    try {
      const result = await attempt(req);
      if (result.claimed) return { ok: true, value: result, req };
      const refusal = classifyRefusal(result.state, req);
      if (refusal?.kind === "duplicate")
        return { ok: false, why: { kind: "duplicate", state: refusal.state } };
      if (refusal?.kind === "stale") return { ok: false, why: { kind: "stale", current: refusal.current } };
      if (refusal?.kind === "fence") {
        fenceFloor = refusal.state.fence + 1;
        if (++fenceRetries <= MAX_FENCE_RETRIES) continue;
        waitReason = "changed";
      } else if (refusal === undefined) {
        waitReason = "changed"; // claimable after all: the item changed between the write and the read
      } else {
        const policy = refusal.kind === "busy" ? o.busy : o.inFlight;
        const final: NotAcquired =
          refusal.kind === "busy" ? { kind: "busy", holder: refusal.state.position } : { kind: "in-flight" };
        if (policy !== "wait") return { ok: false, why: final };
        if (deadlineMs - o.clock.now() <= 0 || signal?.aborted) return { ok: false, why: final };
        waitReason = refusal.kind;
        // Not much past the holder's lease end: a crashed holder frees the subject then.
        untilMs =
          (refusal.state.leaseUntilMs ?? Number.POSITIVE_INFINITY) + o.clockSkewMs + 1 - o.clock.now();
      }
    } catch (error) {
      if (!(error instanceof StoreError) || !error.retryable)
        return { ok: false, why: { kind: "store-error", error } };
      waitReason = "store-error";
      if (deadlineMs - o.clock.now() <= 0 || signal?.aborted) {
        return { ok: false, why: { kind: "store-error", error } };
      }
    }
    const remainingMs = deadlineMs - o.clock.now();
    if (remainingMs <= 0 || signal?.aborted) {
      // Out of time on a loop that is not a policy wait: the last refusal said "try again", so say busy/unknown.
      return {
        ok: false,
        why: {
          kind: "store-error",
          error: new StoreError(`claim of ${target.key} did not settle before the deadline`),
        },
      };
    }
    // Jittered back-off, never past the deadline (one last try there).
    const sleepMs = Math.max(1, Math.min(Math.round(delayMs * (0.5 + random() / 2)), remainingMs, untilMs));
    onWait({ reason: waitReason, delayMs: sleepMs });
    await o.clock.sleep(sleepMs, signal);
    delayMs = Math.min(delayMs * 2, o.maxWaitIntervalMs);
  }
}
