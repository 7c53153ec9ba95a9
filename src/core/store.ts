import type { ClaimRequest, StateRecord } from "./state.js";

/**
 * The state store contract: each operation is one conditional write or read (the DynamoDB claim takes a second
 * write only when the same event claims again, to count its attempts). Every store runs the same contract suite
 * (test/engines/contract.test.ts) on a real engine, and the fault simulator (src/sim). The claim condition and
 * the state machine are in src/core/state.ts.
 *
 * Ambiguity: a request may land although its caller saw an error (a lost response, retried by the SDK or by the
 * guard). Every write therefore recognises its own earlier attempt and reports it as done: a claim by its token,
 * commit and release by fence and status. Errors a store throws are `StoreError`s; `retryable: false` marks a
 * request the engine will never accept (e.g. an item over the size limit).
 */
export interface StateStore {
  /** Short engine name for logs and metrics, e.g. `dynamodb`. */
  readonly engine: string;
  /** The largest result (UTF-8 bytes of JSON) the engine stores beside the state; larger ones are not stored. */
  readonly maxResultBytes: number;
  /**
   * One conditional write. On success: the fence taken and the attempt number of this identity.
   * On refusal: the state the condition was evaluated on (no extra read where the engine returns it).
   */
  claim(req: ClaimRequest): Promise<ClaimResult>;
  /** Extends the lease (and the item's expiry with it); refused when the fence no longer holds. */
  renew(req: RenewRequest): Promise<FencedResult>;
  /** Marks the claimed event done, with its stored result and any atomic writes, in one request. */
  commit(req: CommitRequest): Promise<CommitResult>;
  /**
   * Claim and commit in one request (`guard.apply`): succeeds under the claim condition, and leaves the item
   * done with this event committed at `req.fence` (so any older holder's commit is refused) and `writes`
   * applied atomically. On refusal: the state it was refused on, as for `claim`.
   */
  claimAndCommit(req: ClaimAndCommitRequest): Promise<ClaimAndCommitResult>;
  /** Gives the claim up after a failure, so a redelivery can claim again; refused when the fence no longer holds. */
  release(req: FencedRequest): Promise<FencedResult>;
  /** Strongly consistent read. */
  read(key: string): Promise<StateRecord | undefined>;
  /** Whether `write` can be folded into this store's commit (same engine, same account/region). */
  canFold(write: AtomicWrite): boolean;
}

/** A store's answer to a claim: the claim with its fence, or the state it was refused on. */
export type ClaimResult =
  | {
      claimed: true;
      fence: number;
      attempt: number;
      /** The lease the item holds (a recognised claim holds the one its first attempt wrote). */
      leaseUntilMs: number;
      /** The state before this claim (to tell a takeover or supersede from a fresh claim); unknown when recognised. */
      previous?: StateRecord;
    }
  | { claimed: false; state: StateRecord };

/** A step on a claim already held: the key and the claim's fence. */
export interface FencedRequest {
  key: string;
  fence: number;
}

/** A lease renewal (heartbeat) of a held claim. */
export interface RenewRequest extends FencedRequest {
  leaseUntilMs: number;
  /** The item's new expiry: renewals keep TTL ahead of the lease, so TTL never removes a live claim. */
  expiresAtSeconds: number;
}

/** `ok: false`: the fence no longer holds; `state` is what holds instead (undefined: the item is gone). */
export type FencedResult = { ok: true } | { ok: false; state: StateRecord | undefined };

/** The commit of a held claim, with the result to replay and the writes to fold in. */
export interface CommitRequest extends FencedRequest {
  /** Identity of the claimed event. */
  identity: string;
  /** JSON of the result to replay to duplicates; undefined stores none. */
  result?: string;
  /** The result was too large to store: its size, kept so duplicates can say so. */
  resultOmittedBytes?: number;
  /** The event's payload fingerprint, kept as the committed one; undefined keeps none. */
  fingerprint?: string;
  expiresAtSeconds: number;
  /** Effects applied in the same atomic request as the commit. */
  writes?: readonly AtomicWrite[];
}

/** `guard.apply`'s one request: claim, apply `writes` and commit at once. */
export interface ClaimAndCommitRequest extends ClaimRequest {
  result?: string;
  resultOmittedBytes?: number;
  fingerprint?: string;
  writes?: readonly AtomicWrite[];
}

/**
 * A store's answer to a claim-and-commit: committed with each write's outcome, or the state it was refused
 * on.
 */
export type ClaimAndCommitResult =
  | { claimed: true; writes: WriteOutcome[] }
  | { claimed: false; state: StateRecord };

/** A store's answer to a commit: committed with each write's outcome, or refused. */
export type CommitResult =
  | { committed: true; writes: WriteOutcome[] }
  /** The fence no longer holds; `state` is the state it was refused on, when the engine returns it. */
  | { committed: false; state?: StateRecord };

/**
 * An effect to apply atomically with the commit, built by a sink (e.g. a fenced DynamoDB put).
 * `engine` tells which stores can fold it.
 */
export interface AtomicWrite {
  readonly engine: string;
  readonly description: string;
}

/**
 * `applied`: written. `stale`: the target already held a newer position, so nothing was written. `refused`: the
 * write's own (user) condition did not hold, so nothing was written. `unknown`: the commit landed but its response
 * was lost, so which is not known (a fenced target holds this event's work or newer either way).
 */
export type WriteOutcome = { description: string; status: "applied" | "stale" | "refused" | "unknown" };

/** A recognised commit: it landed with its writes, but whether each applied or was stale is not known. */
export function unknownWrites(writes: readonly AtomicWrite[] | undefined): WriteOutcome[] {
  return (writes ?? []).map((w) => ({ description: w.description, status: "unknown" }));
}
