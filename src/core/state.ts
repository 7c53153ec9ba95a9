import type { Position } from "./position.js";

/**
 * The state of one subject (or, for events without a position, of one event) in a state store.
 *
 * State machine (one item per state key; `fence` only ever grows, so a stale holder can be told apart):
 *
 *   (absent) --claim--> running(pos, eid, fence=1, lease)
 *   running  --commit(fence)--> done(cpos=pos, ceid=eid, result)
 *   running  --release(fence)--> released          (cpos/ceid unchanged: the last committed event)
 *   running  --renew(fence)--> running (lease extended)
 *   done | released | running-with-expired-lease --claim(newer than cpos)--> running(fence+1)
 *   running(older pos, live lease) --claim with supersede(newer than cpos)--> running(fence+1)
 *
 * A claim succeeds iff the item is absent, or
 *   (status <> running OR lease < now [OR pos < :pos with supersede]) AND (cpos absent OR cpos < :pos).
 * Commit, renew and release succeed iff `fence` still equals the claimer's fence and status is running.
 *
 * Events without a position (dedupe only) use the empty position and their own state key, so a
 * committed one is never claimable again (cpos = "" is not < "").
 */
export type StateStatus = "running" | "done" | "released";

export interface StateRecord {
  key: string;
  status: StateStatus;
  /** Position of the current or last claim. */
  position: Position;
  /** Identity of the current or last claim. */
  identity: string;
  fence: number;
  /** Epoch ms; present while running. */
  leaseUntilMs?: number;
  /** Last committed event. */
  committedPosition?: Position;
  committedIdentity?: string;
  /** JSON of the committed event's result, replayed to duplicates. */
  result?: string;
  /** Epoch seconds after which the store may delete the item (DynamoDB TTL). */
  expiresAtSeconds?: number;
  /** Claims so far of the current identity. */
  attempts: number;
}

/** Position used for events that are deduplicated but not ordered. */
export const UNORDERED_POSITION: Position = "";

export interface ClaimRequest {
  key: string;
  position: Position;
  identity: string;
  nowMs: number;
  leaseUntilMs: number;
  expiresAtSeconds: number;
  /** Take the claim from a live holder of an older position (busy policy `supersede`). */
  supersede: boolean;
}

/** Whether a claim may be taken over `state` (the reference predicate; stores implement it natively). */
export function isClaimable(state: StateRecord | undefined, req: ClaimRequest): boolean {
  if (!state) return true;
  const holderGone =
    state.status !== "running" ||
    (state.leaseUntilMs ?? 0) < req.nowMs ||
    (req.supersede && state.position < req.position);
  const newerThanCommitted = state.committedPosition === undefined || state.committedPosition < req.position;
  return holderGone && newerThanCommitted;
}

export type Refusal =
  /** The same event was committed. */
  | { kind: "duplicate"; state: StateRecord }
  /** A newer (or equal, other) event was committed, or a newer one is running. */
  | { kind: "stale"; state: StateRecord; current: Position }
  /** An older event of the subject holds a live lease. */
  | { kind: "busy"; state: StateRecord }
  /** The same event is running elsewhere with a live lease. */
  | { kind: "in-flight"; state: StateRecord };

/** Why a claim was refused, from the state it was refused on. `undefined` if it is claimable after all. */
export function classifyRefusal(state: StateRecord, req: ClaimRequest): Refusal | undefined {
  const cpos = state.committedPosition;
  if (cpos !== undefined && cpos >= req.position) {
    if (cpos === req.position && state.committedIdentity === req.identity)
      return { kind: "duplicate", state };
    return { kind: "stale", state, current: cpos };
  }
  const live = state.status === "running" && (state.leaseUntilMs ?? 0) >= req.nowMs;
  if (live) {
    if (state.identity === req.identity) return { kind: "in-flight", state };
    if (state.position > req.position) return { kind: "stale", state, current: state.position };
    if (state.position === req.position) return { kind: "in-flight", state };
    if (!req.supersede) return { kind: "busy", state };
  }
  return undefined;
}
