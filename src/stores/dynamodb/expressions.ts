import { type AttributeValue, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { StoreError } from "../../core/errors.js";
import type { ClaimRequest } from "../../core/state.js";

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
