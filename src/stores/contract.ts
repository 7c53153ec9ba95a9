import type { ClaimRequest, StateRecord } from "../core/state.js";

/**
 * The state store contract: five operations, each one conditional write or read. Every store runs the
 * same contract suite (test/stores/contract.test.ts) on a real engine. The claim condition and the
 * state machine are in src/core/state.ts.
 */
export interface StateStore {
  /** Short engine name for logs and metrics, e.g. `dynamodb`. */
  readonly engine: string;
  /**
   * One conditional write. On success: the new fence and the attempt number of this identity.
   * On refusal: the state the condition was evaluated on (no extra read where the engine returns it).
   */
  claim(req: ClaimRequest): Promise<ClaimResult>;
  /** Extends the lease; false when the fence no longer holds (lease lost). */
  renew(req: FencedRequest & { leaseUntilMs: number }): Promise<boolean>;
  /** Marks the claimed event done, with its stored result and any atomic writes, in one request. */
  commit(req: CommitRequest): Promise<CommitResult>;
  /**
   * Claim and commit in one request (`guard.apply`): succeeds under the claim condition, and leaves the item
   * done with this event committed, `fence` incremented (so any older holder's commit is refused) and `writes`
   * applied atomically. On refusal: the state it was refused on, as for `claim`.
   */
  claimAndCommit(req: ClaimAndCommitRequest): Promise<ClaimAndCommitResult>;
  /** Gives the claim up after a failure, so a redelivery can claim again; false when the fence no longer holds. */
  release(req: FencedRequest): Promise<boolean>;
  /** Strongly consistent read. */
  read(key: string): Promise<StateRecord | undefined>;
  /** Whether `write` can be folded into this store's commit (same engine, same account/region). */
  canFold(write: AtomicWrite): boolean;
}

export type ClaimResult =
  | {
      claimed: true;
      fence: number;
      attempt: number;
      /** The state before this claim (to tell a takeover or supersede from a fresh claim). */
      previous?: StateRecord;
    }
  | { claimed: false; state: StateRecord };

export interface FencedRequest {
  key: string;
  fence: number;
}

export interface CommitRequest extends FencedRequest {
  /** Identity of the claimed event (its attempt counter is dropped at commit). */
  identity: string;
  /** JSON of the result to replay to duplicates; undefined stores none. */
  result?: string;
  expiresAtSeconds: number;
  /** Effects applied in the same atomic request as the commit. */
  writes?: readonly AtomicWrite[];
}

export interface ClaimAndCommitRequest extends ClaimRequest {
  result?: string;
  writes?: readonly AtomicWrite[];
}

export type ClaimAndCommitResult =
  | { claimed: true; writes: WriteOutcome[] }
  | { claimed: false; state: StateRecord };

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

/** `applied`: written. `stale`: the target already held a newer position, so nothing was written. */
export type WriteOutcome = { description: string; status: "applied" | "stale" };
