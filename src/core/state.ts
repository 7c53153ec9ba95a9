import { type Position, positionBefore } from "./position.js";

/**
 * The state of one subject (or, for events without a position, of one event) in a state store.
 *
 * State machine (one item per state key):
 *
 *   (absent) --claim(f)--> running(pos, eid, fence=f, lease, token)
 *   running  --commit(fence)--> done(cpos=pos, ceid=eid, result)
 *   running  --release(fence)--> released          (cpos/ceid unchanged: the last committed event)
 *   running  --renew(fence)--> running (lease and expiry extended)
 *   done | released | running-with-expired-lease --claim(f, newer than cpos)--> running(fence=f)
 *   running(older pos, live lease) --claim(f) with supersede (newer than cpos)--> running(fence=f)
 *   any state --claimAndCommit(f)--> done (as claim then commit in one write)
 *
 * A claim succeeds iff the item is absent, or
 *   (status <> running OR lease + grace < now [OR pos < :pos with supersede]) AND (cpos absent OR cpos < :pos)
 *   AND fence < :f.
 * Commit, renew and release succeed iff `fence` still equals the claimer's fence and status is running.
 *
 * Fences: the claimer picks `f` (the guard uses its clock in microseconds, or the refused item's fence + 1), and the
 * condition `fence < :f` keeps them strictly increasing. Because new items start from the clock, a fence is never
 * handed out twice for a subject even after its item was deleted (TTL), so a holder from before the deletion is
 * refused. `apply` knows its fence before its one request, so its sink writes carry a real fence.
 *
 * Tokens: every claim writes a token unique to that guard call. A claim whose response was lost is retried by the
 * SDK or the guard; the retry is refused (the first attempt holds the item), and the token in the refused item says
 * the claim is ours. Commit and release recognise their own landed attempt by fence and status.
 *
 * `attempts` counts consecutive claims of the item's current identity: one attribute, so the item stays bounded
 * however many identities come and go (a hot key, abandoned claims).
 *
 * Events without a position (dedupe only) use the empty position and their own state key, so a
 * committed one is never claimable again (cpos = "" is not < "").
 */
export type StateStatus = "running" | "done" | "released";

/** One state key's record in a store: the current or last claim, its lease and fence, the committed event. */
export interface StateRecord {
  key: string;
  status: StateStatus;
  /** Position of the current or last claim. */
  position: Position;
  /** Identity of the current or last claim. */
  identity: string;
  fence: number;
  /** Token of the claim that holds (or last held) the item. */
  token?: string;
  /** Epoch ms; present while running. */
  leaseUntilMs?: number;
  /** Last committed event. */
  committedPosition?: Position;
  committedIdentity?: string;
  /** JSON of the committed event's result, replayed to duplicates. */
  result?: string;
  /** The committed event had a result too large to store (its size in bytes): duplicates get none. */
  resultOmittedBytes?: number;
  /** The committed event's payload fingerprint, when the guard was given one (see GuardedEvent.fingerprint). */
  committedFingerprint?: string;
  /** Epoch seconds after which the store may delete the item (DynamoDB TTL). */
  expiresAtSeconds?: number;
  /** Consecutive claims of the current identity. */
  attempts: number;
}

/** Position used for events that are deduplicated but not ordered. */
export const UNORDERED_POSITION: Position = "";

/** A claim of `key` for one event, as the guard asks a store for it. */
export interface ClaimRequest {
  key: string;
  position: Position;
  identity: string;
  /** The claimer's clock. */
  nowMs: number;
  leaseUntilMs: number;
  expiresAtSeconds: number;
  /** Take the claim from a live holder of an older position (busy policy `supersede`). */
  supersede: boolean;
  /** The fence this claim takes; it must exceed the item's (see above). */
  fence: number;
  /** Unique per guard call; written into the item so that a retried claim recognises its own landed attempt. */
  token: string;
  /**
   * A holder's lease counts as expired only `leaseGraceMs` after its end by the claimer's clock: the bound on clock
   * skew between workers under which a live holder is never taken over.
   */
  leaseGraceMs: number;
}

/** Whether the lease in `state` has ended for a claimer (the grace covers clock skew). */
export function leaseExpired(state: StateRecord, req: Pick<ClaimRequest, "nowMs" | "leaseGraceMs">): boolean {
  return (state.leaseUntilMs ?? 0) + req.leaseGraceMs < req.nowMs;
}

/** Whether a claim may be taken over `state`, fence aside (the reference predicate; stores implement it natively). */
export function isClaimable(state: StateRecord | undefined, req: ClaimRequest): boolean {
  if (!state) return true;
  const holderGone =
    state.status !== "running" ||
    leaseExpired(state, req) ||
    (req.supersede && positionBefore(state.position, req.position));
  const newerThanCommitted =
    state.committedPosition === undefined || positionBefore(state.committedPosition, req.position);
  return holderGone && newerThanCommitted;
}

/** The claim condition in full: claimable and the requested fence is above the item's. */
export function claimAllowed(state: StateRecord | undefined, req: ClaimRequest): boolean {
  return isClaimable(state, req) && (state === undefined || state.fence < req.fence);
}

/**
 * The refused item holds this very guard call's claim (its response was lost and the request retried). The token
 * alone decides: the guard may have sent the retry with another fence, and the landed fence is the item's.
 */
export function isOwnClaim(state: StateRecord, req: Pick<ClaimRequest, "token">): boolean {
  return state.token === req.token;
}

/**
 * A refused claim that is this call's own landed claim (see isOwnClaim) is a claim, as it landed: its fence,
 * attempt and lease. Every store answers a retried claim this way.
 */
export function landedClaim(
  state: StateRecord,
  req: Pick<ClaimRequest, "token" | "leaseUntilMs">,
): { claimed: true; fence: number; attempt: number; leaseUntilMs: number } | undefined {
  if (!isOwnClaim(state, req) || state.status !== "running") return undefined;
  return {
    claimed: true,
    fence: state.fence,
    attempt: state.attempts,
    leaseUntilMs: state.leaseUntilMs ?? req.leaseUntilMs,
  };
}

/** A refused commit (or release) whose fence holds the state it set: a retry of a request that had landed. */
export function landedAs(state: StateRecord | undefined, fence: number, status: StateStatus): boolean {
  return state?.fence === fence && state.status === status;
}

/** How a claim came about, from the state before it: a takeover of a crashed holder, or a supersede of a live one. */
export function describeClaim(
  previous: StateRecord | undefined,
  req: Pick<ClaimRequest, "nowMs" | "leaseGraceMs">,
): { superseded?: Position; tookOver?: true } {
  if (previous?.status !== "running") return {};
  return leaseExpired(previous, req) ? { tookOver: true } : { superseded: previous.position };
}

/** Why a claim was refused, with the state it was refused on. */
export type Refusal =
  /** The same event was committed. */
  | { kind: "duplicate"; state: StateRecord }
  /** A newer (or equal, other) event was committed, or a newer one is running. */
  | { kind: "stale"; state: StateRecord; current: Position }
  /** An older event of the subject holds a live lease. */
  | { kind: "busy"; state: StateRecord }
  /** The same event is running elsewhere with a live lease. */
  | { kind: "in-flight"; state: StateRecord }
  /** Claimable, but the item's fence is not below the requested one: claim again above it. */
  | { kind: "fence"; state: StateRecord };

/**
 * Why a claim was refused, from the state it was refused on. `undefined` if it is claimable after all (the state
 * changed between the write and a fallback read). Recognising one's own claim (`isOwnClaim`) comes first.
 */
export function classifyRefusal(state: StateRecord, req: ClaimRequest): Refusal | undefined {
  const cpos = state.committedPosition;
  if (cpos !== undefined && !positionBefore(cpos, req.position)) {
    if (cpos === req.position && state.committedIdentity === req.identity)
      return { kind: "duplicate", state };
    return { kind: "stale", state, current: cpos };
  }
  const live = state.status === "running" && !leaseExpired(state, req);
  if (live) {
    if (state.identity === req.identity) return { kind: "in-flight", state };
    if (positionBefore(req.position, state.position))
      return { kind: "stale", state, current: state.position };
    if (state.position === req.position) return { kind: "in-flight", state };
    if (!req.supersede) return { kind: "busy", state };
  }
  if (state.fence >= req.fence) return { kind: "fence", state };
  return undefined;
}
