import {
  type AttributeValue,
  ConditionalCheckFailedException,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import { StoreError } from "../../core/errors.js";
import {
  type ClaimRequest,
  claimAllowed,
  landedAs,
  landedClaim,
  type StateRecord,
} from "../../core/state.js";
import type {
  ClaimAndCommitRequest,
  ClaimResult,
  CommitRequest,
  FencedRequest,
  FencedResult,
  RenewRequest,
} from "../../core/store.js";

/** Pieces of the conditional requests both DynamoDB stores (state table and inline state) send. */

export type Item = Record<string, AttributeValue>;

export const S = (s: string): AttributeValue => ({ S: s });
export const N = (n: number): AttributeValue => ({ N: String(n) });

/** Expressions with some placeholders written out as the names themselves, and what they use. */
export interface ExpressionShape {
  update: string;
  condition: string;
  /** The value placeholders used. */
  values: readonly string[];
  /** The name placeholders left (to send in ExpressionAttributeNames). */
  names: readonly string[];
}

const SHAPES = new WeakMap<object, Map<string, ExpressionShape>>();
const MAX_SHAPES = 512;

/**
 * The expressions with each placeholder of `plain` replaced by its attribute name, which must be a valid name in an
 * expression (no reserved word, no special character). DynamoDB substitutes every placeholder of every request, and
 * fewer of them cost it less (bench/expression-cost.ts); the attributes written are the same. Cached by text: a
 * store sends a handful of shapes.
 */
export function expressionShape(
  update: string,
  condition: string,
  plain: Readonly<Record<string, string>>,
): ExpressionShape {
  let cache = SHAPES.get(plain);
  if (!cache) {
    cache = new Map();
    SHAPES.set(plain, cache);
  }
  const text = `${update}\n${condition}`;
  const cached = cache.get(text);
  if (cached) return cached;
  const write = (expression: string) => expression.replace(/#\w+/g, (p) => plain[p] ?? p);
  const shape: ExpressionShape = {
    update: write(update),
    condition: write(condition),
    values: [...new Set(text.match(/:\w+/g))],
    names: [...new Set(text.match(/#\w+/g))].filter((p) => plain[p] === undefined),
  };
  if (cache.size >= MAX_SHAPES) cache.clear();
  cache.set(text, shape);
  return shape;
}

/** Only the values an expression uses may be sent (DynamoDB rejects unused ones). */
export function usedValues(shape: ExpressionShape, values: Item): Item {
  const used: Item = {};
  for (const k of shape.values) {
    const v = values[k];
    if (v !== undefined) used[k] = v;
  }
  return used;
}

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

/**
 * The clauses of the committed event's payload fingerprint (`#cfp`), stored result (`#res`) and omitted-result size
 * (`#rskip`), for each combination of them being present (bit 1, 2, 4): SET the present ones, REMOVE the others.
 */
function resultClauses(prefix: string, remove: readonly string[]): UpdateClauses[] {
  return Array.from({ length: 8 }, (_, present) => {
    let set = prefix;
    const removed = [...remove];
    for (const [bit, name] of [
      [1, "cfp"],
      [2, "res"],
      [4, "rskip"],
    ] as const) {
      if (present & bit) set += `, #${name} = :${name}`;
      else removed.push(`#${name}`);
    }
    return { set, remove: removed };
  });
}

/** A SET clause and the names to REMOVE. */
export interface UpdateClauses {
  set: string;
  remove: readonly string[];
}

/**
 * Sets the values of the result clauses `req` needs and gives those clauses: one of the prebuilt `byResult`, so that
 * every request of a shape sends (and a store can cache by) the same strings.
 */
function withResult(
  byResult: UpdateClauses[],
  req: { result?: string; resultOmittedBytes?: number; fingerprint?: string },
  values: Item,
): UpdateClauses {
  let present = 0;
  if (req.fingerprint !== undefined) {
    values[":cfp"] = S(req.fingerprint);
    present |= 1;
  }
  if (req.result !== undefined) {
    values[":res"] = S(req.result);
    present |= 2;
  }
  if (req.resultOmittedBytes !== undefined) {
    values[":rskip"] = N(req.resultOmittedBytes);
    present |= 4;
  }
  return byResult[present] as UpdateClauses;
}

/** An update's parts: the SET clause, the attributes to REMOVE, and the values both use. */
export interface UpdateParts extends UpdateClauses {
  values: Item;
}

/** The attempt counter and the lease are dropped at commit: they are only needed while a claim runs. */
const CLAIM_AND_COMMIT_CLAUSES = resultClauses(
  "SET #st = :done, #pos = :pos, #eid = :eid, #cpos = :pos, #ceid = :eid, #fence = :fence, #tok = :tok, #exp = :exp",
  ["#lease", "#att"],
);
const COMMIT_CLAUSES = resultClauses("SET #st = :done, #cpos = #pos, #ceid = #eid, #exp = :exp", [
  "#lease",
  "#att",
]);

/** Claim and commit in one update (`apply`): the claimed event becomes the committed one. */
export function claimAndCommitParts(req: ClaimAndCommitRequest): UpdateParts {
  const values = claimValues(req);
  values[":done"] = S("done");
  values[":tok"] = S(req.token);
  values[":exp"] = N(req.expiresAtSeconds);
  return { ...withResult(CLAIM_AND_COMMIT_CLAUSES, req, values), values };
}

/** The commit of a running claim (condition: COMMIT_CONDITION): its event becomes the committed one. */
export function commitParts(req: CommitRequest): UpdateParts {
  const values: Item = {
    ":done": S("done"),
    ":running": S("running"),
    ":fence": N(req.fence),
    ":exp": N(req.expiresAtSeconds),
  };
  return { ...withResult(COMMIT_CLAUSES, req, values), values };
}

/** Only the holder of the fence, while its claim runs, may renew, release or commit. */
export const FENCED_CONDITION = "#fence = :fence AND #st = :running";

/** A conditional update under FENCED_CONDITION: ok, or refused with the state it was refused on. */
export type FencedUpdate = (
  op: string,
  req: FencedRequest,
  expression: string,
  values: Item,
) => Promise<FencedResult>;

/** Moves the lease end and the item's expiry on, for the holder of the fence. */
export function renewWith(fenced: FencedUpdate, req: RenewRequest): Promise<FencedResult> {
  return fenced("renew", req, "SET #lease = :lease, #exp = :exp", {
    ":lease": N(req.leaseUntilMs),
    ":exp": N(req.expiresAtSeconds),
  });
}

/** Gives the holder's claim up, so the next delivery claims at once. */
export async function releaseWith(fenced: FencedUpdate, req: FencedRequest): Promise<FencedResult> {
  const r = await fenced("release", req, "SET #st = :released REMOVE #lease", { ":released": S("released") });
  // A retry of a release that landed.
  if (!r.ok && landedAs(r.state, req.fence, "released")) return { ok: true };
  return r;
}

/** The claim's SET clause: status, position, identity, fence, token, lease, expiry and the attempt counter. */
export function claimSet(sameIdentity: boolean): string {
  return (
    "SET #st = :running, #pos = :pos, #eid = :eid, #fence = :fence, #tok = :tok, #lease = :lease, #exp = :exp, " +
    (sameIdentity ? "#att = if_not_exists(#att, :zero) + :one" : "#att = :one")
  );
}

/**
 * The claim condition (src/core/state.ts): the item is absent (`exists` names an attribute every state item has:
 * the key in the state table, the fence in a user's row, which may exist without state), or no live holder (or, with
 * supersede, an older one), the position is newer than the committed one, and the fence is above the item's.
 */
export function claimCondition(req: ClaimRequest, exists: "#pk" | "#fence"): string {
  const conditions = CLAIM_CONDITIONS[exists];
  return req.supersede ? conditions.supersede : conditions.wait;
}

function claimConditionOf(exists: "#pk" | "#fence", supersede: boolean): string {
  const holderGone = supersede
    ? "(#st <> :running OR #lease < :expiredBefore OR #pos < :pos)"
    : "(#st <> :running OR #lease < :expiredBefore)";
  return (
    `(attribute_not_exists(${exists}) OR (${holderGone} AND (attribute_not_exists(#cpos) OR #cpos < :pos) ` +
    "AND #fence < :fence))"
  );
}

/** Built once: every claim sends one of these, and a store's expression cache is keyed by them. */
const CLAIM_CONDITIONS = {
  "#pk": { wait: claimConditionOf("#pk", false), supersede: claimConditionOf("#pk", true) },
  "#fence": { wait: claimConditionOf("#fence", false), supersede: claimConditionOf("#fence", true) },
};

/** One claim write's condition (see claimCountingAttempts): the claim condition, for a new or the same identity. */
export function claimOnceCondition(
  req: ClaimRequest,
  sameIdentity: boolean,
  exists: "#pk" | "#fence",
): string {
  const identity = sameIdentity
    ? "#eid = :eid"
    : `(attribute_not_exists(${exists === "#pk" ? "#pk" : "#eid"}) OR #eid <> :eid)`;
  return `${claimCondition(req, exists)} AND ${identity}`;
}

/** One claim write (see claimCountingAttempts): its SET clause, condition and values. */
export function claimWrite(
  req: ClaimRequest,
  sameIdentity: boolean,
  exists: "#pk" | "#fence",
): { update: string; condition: string; values: Item } {
  return {
    update: claimSet(sameIdentity),
    condition: claimOnceCondition(req, sameIdentity, exists),
    values: {
      ...claimValues(req),
      ":tok": S(req.token),
      ":lease": N(req.leaseUntilMs),
      ":exp": N(req.expiresAtSeconds),
      ":zero": N(0),
      ":one": N(1),
    },
  };
}

/** A landed claim, from the state it replaced (a takeover or supersede shows there; none: a fresh claim). */
export function claimedOver(
  req: ClaimRequest,
  sameIdentity: boolean,
  previous: StateRecord | undefined,
): ClaimResult {
  const attempt = sameIdentity ? (previous?.attempts ?? 0) + 1 : 1;
  return { claimed: true, fence: req.fence, attempt, leaseUntilMs: req.leaseUntilMs, previous };
}

/** What a store gives `claimWith`: how it sends a claim write and reads items. */
export interface ClaimDriver {
  /** Sends the UpdateItem; returns the old state (undefined: a fresh claim). */
  send(write: { update: string; condition: string; values: Item }): Promise<StateRecord | undefined>;
  /** The state a refusal was refused on (from the error's old item, or read). */
  refusedState(item: Item | undefined): Promise<StateRecord>;
  wrap(error: unknown): StoreError;
}

/**
 * A claim on DynamoDB: one conditional UpdateItem per write (two for the same identity's re-claim: see
 * claimCountingAttempts); a refusal that is this call's own landed claim is a claim.
 */
export function claimWith(
  req: ClaimRequest,
  exists: "#pk" | "#fence",
  driver: ClaimDriver,
): Promise<ClaimResult> {
  return claimCountingAttempts(req, async (sameIdentity) => {
    try {
      return claimedOver(req, sameIdentity, await driver.send(claimWrite(req, sameIdentity, exists)));
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw driver.wrap(error);
      const state = await driver.refusedState(error.Item);
      // The SDK (or the guard) retried a claim that had landed: it is ours.
      return landedClaim(state, req) ?? { refused: state };
    }
  });
}

/** The attribute of each state field, by the placeholder the expressions use. */
export type StateNames = Record<
  | "#st"
  | "#pos"
  | "#eid"
  | "#fence"
  | "#tok"
  | "#lease"
  | "#cpos"
  | "#ceid"
  | "#res"
  | "#rskip"
  | "#exp"
  | "#att"
  | "#cfp",
  string
>;

/** A state item (or a row's state attributes) as a StateRecord; absent attributes are absent fields. */
export function recordFrom(item: Item, key: string, n: StateNames): StateRecord {
  const str = (name: string) => item[name]?.S;
  const num = (name: string) => (item[name]?.N !== undefined ? Number(item[name]?.N) : undefined);
  const record: StateRecord = {
    key,
    status: (str(n["#st"]) ?? "released") as StateRecord["status"],
    position: str(n["#pos"]) ?? "",
    identity: str(n["#eid"]) ?? "",
    fence: num(n["#fence"]) ?? 0,
    attempts: num(n["#att"]) ?? 0,
  };
  const optional = {
    token: str(n["#tok"]),
    leaseUntilMs: num(n["#lease"]),
    committedPosition: str(n["#cpos"]),
    committedIdentity: str(n["#ceid"]),
    result: str(n["#res"]),
    resultOmittedBytes: num(n["#rskip"]),
    committedFingerprint: str(n["#cfp"]),
    expiresAtSeconds: num(n["#exp"]),
  };
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) Object.assign(record, { [k]: v });
  return record;
}
