import { type AttributeValue, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { StoreError } from "../../core/errors.js";
import { type ClaimRequest, claimAllowed, type StateRecord } from "../../core/state.js";
import type { ClaimResult } from "../../core/store.js";

/** Pieces of the conditional requests both DynamoDB stores (state table and inline state) send. */

export type Item = Record<string, AttributeValue>;

export const S = (s: string): AttributeValue => ({ S: s });
export const N = (n: number): AttributeValue => ({ N: String(n) });

/** The values every claim condition uses; a lease counts as expired only `leaseGraceMs` after its end. */
export function claimValues(req: ClaimRequest): Item {
  return {
    ":pos": S(req.position),
    ":eid": S(req.identity),
    ":fence": N(req.fence),
    ":running": S("running"),
    ":expiredBefore": N(req.nowMs - req.leaseGraceMs),
  };
}

/**
 * Sets (or removes) the stored result (`#res`) and the omitted-result size (`#rskip`); returns the SET clauses to
 * append and pushes the names to remove.
 */
export function resultUpdate(
  req: { result?: string; resultOmittedBytes?: number },
  values: Item,
  remove: string[],
): string {
  let set = "";
  if (req.result !== undefined) {
    set += ", #res = :res";
    values[":res"] = S(req.result);
  } else remove.push("#res");
  if (req.resultOmittedBytes !== undefined) {
    set += ", #rskip = :rskip";
    values[":rskip"] = N(req.resultOmittedBytes);
  } else remove.push("#rskip");
  return set;
}

/**
 * A DynamoDB failure as a `StoreError`. Validation (an item over 400 KB, a transaction over its limits) and a
 * missing table are permanent: retrying the same request cannot succeed.
 */
export function storeError(what: string, op: string, key: string, error: unknown): StoreError {
  const name = error instanceof Error ? error.name : "";
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
  const permanent =
    name === "ValidationException" ||
    name === "ResourceNotFoundException" ||
    reasons.some((r) => r.Code === "ValidationError");
  return new StoreError(`${what} ${op} of ${key} failed: ${message.slice(0, 500)}`, {
    cause: error,
    retryable: !permanent,
  });
}

/** One claim write: claimed, or refused with the state it was refused on. */
export type ClaimOnce = (sameIdentity: boolean) => Promise<ClaimResult | { refused: StateRecord }>;

/**
 * A claim that counts attempts in one attribute: the first write assumes a new identity (attempt 1); when the
 * refusal shows the same identity could claim again (a retry after a failure or a crash), a second write counts on.
 */
export async function claimCountingAttempts(req: ClaimRequest, once: ClaimOnce): Promise<ClaimResult> {
  const first = await once(false);
  if ("claimed" in first) return first;
  const state = first.refused;
  if (state.identity === req.identity && claimAllowed(state, req)) {
    const second = await once(true);
    return "claimed" in second ? second : { claimed: false, state: second.refused };
  }
  return { claimed: false, state };
}

/** The claim's SET clause: status, position, identity, fence, token, lease, expiry and the attempt counter. */
export function claimSet(sameIdentity: boolean): string {
  return (
    "SET #st = :running, #pos = :pos, #eid = :eid, #fence = :fence, #tok = :tok, #lease = :lease, #exp = :exp, " +
    (sameIdentity ? "#att = if_not_exists(#att, :zero) + :one" : "#att = :one")
  );
}
