import type { Publish } from "../outbox/publish.js";
import type { GuardOutcomeStatus } from "./outcomes.js";
import type { Position } from "./position.js";
import type { StateRecord } from "./state.js";
import type { AtomicWrite, WriteOutcome } from "./store.js";

/** The guard's vocabulary: the event it guards, the context its handler gets, its outcomes and its trace. */

/** What the guard needs to know of an event. */
export interface GuardedEvent {
  /** What order and exclusivity are scoped to, e.g. `bucket/key` or an order id. */
  subject: string;
  /** What makes two deliveries the same event, unique within the subject. */
  identity: string;
  /** Order within the subject (printable ASCII, see position.ts); absent: deduplicate only. */
  position?: Position;
  /**
   * A digest of the event's payload (opt-in). Kept with the commit; a later delivery of the same identity with
   * another fingerprint is a `conflict` (the same idempotency key reused for different content), not a duplicate.
   */
  fingerprint?: string;
}

/** Per-call options of `guard.run` and `guard.apply`. */
export interface RunOptions {
  /** Epoch ms by which waiting must give up (e.g. Lambda deadline minus a margin). Default now + leaseMs. */
  deadlineMs?: number;
  /** Aborts the handler from outside (e.g. the Lambda is about to time out). */
  signal?: AbortSignal;
  /** Called on this call's steps, after the guard's `onEvent`: a caller observes each event on one shared guard. */
  onEvent?: (event: GuardTrace) => void;
}

/** What a handler under `guard.run` gets: the claim it holds and the writes to fold into its commit. */
export interface GuardContext {
  /** Aborted when the lease is lost or cannot be confirmed, or the outer signal aborts. */
  signal: AbortSignal;
  fence: number;
  position: Position | undefined;
  /** 1 on the first claim of this event, 2 after one failed or crashed run, … (consecutive claims of it). */
  attempt: number;
  subject: string;
  identity: string;
  stateKey: string;
  /** Applies `write` atomically with the commit (one request), where the store can fold it. */
  atCommit(write: AtomicWrite): void;
  /**
   * The idempotency key of this event's effect `name` (an API call: `Idempotency-Key: ctx.effectKey("charge")`): the
   * same on every retry, takeover and redelivery of the event, another for another event or name
   * (src/core/effect-key.ts; docs/effects.md says what it makes once).
   */
  effectKey(name: string): string;
  /**
   * Publishes `message` to `destination` at the commit: an outbox entry folded into the commit (the guard's `outbox`
   * option), sent by a relay after it, so the message exists if and only if the event committed. Returns the
   * message's id (`eonceMessageId`), the same in every run of the event (docs/effects.md).
   */
  publish: Publish;
}

/**
 * How one `guard.run` or `guard.apply` ended; `status` says whether the delivery is acknowledged (see
 * `isAcknowledged`).
 */
export type GuardOutcome<R> =
  | {
      status: "processed";
      result: R;
      fence: number;
      attempt: number;
      writes: WriteOutcome[];
      /** The claim was taken from a live holder of an older position (busy policy `supersede`). */
      superseded?: Position;
      /** The claim was taken from a holder whose lease had expired (crashed or frozen run). */
      tookOver?: boolean;
      /** The result was too large to store (its size in bytes): duplicates will get no result. */
      resultOmittedBytes?: number;
    }
  | { status: "duplicate"; result: R | undefined; resultOmittedBytes?: number }
  /** The same identity was committed with another payload fingerprint: nothing ran; not acknowledged. */
  | { status: "conflict"; fingerprint: string; committedFingerprint: string }
  | { status: "stale"; position: Position | undefined; current: Position }
  | { status: "busy"; holder: Position }
  | { status: "in-flight" }
  /** The handler ran, but another claim holds a newer fence: nothing was committed by this run; that holder will. */
  | { status: "lease-lost"; reason: "superseded" | "expired"; current?: StateRecord }
  /** The handler threw (or the store refused its commit for good); the claim was released where possible. */
  | { status: "failed"; error: unknown; released: boolean }
  /** The store did not confirm the claim, lease or commit (an outage): the delivery must be retried. */
  | { status: "unconfirmed"; phase: "claim" | "commit" | "release"; error: unknown };

/** One step of the guard (claimed, waiting, committed, …), given to `onEvent` for logs, metrics and tests. */
export type GuardTrace =
  | {
      type: "claimed";
      key: string;
      fence: number;
      attempt: number;
      superseded?: Position;
      tookOver?: boolean;
    }
  | {
      type: "waiting";
      key: string;
      reason: "busy" | "in-flight" | "store-error" | "changed";
      delayMs: number;
    }
  | { type: "heartbeat"; key: string; fence: number; ok: boolean; error?: unknown }
  | { type: "outcome"; key: string; status: GuardOutcomeStatus; durationMs: number };

/**
 * The handler `guard.run` runs while it holds the claim; its result is committed and replayed to duplicates.
 */
export type GuardHandler<R> = (ctx: GuardContext) => Promise<R>;

/** What `apply`'s compute function gets: no lease, no signal; the fence its one request will take. */
export type ApplyContext = Pick<
  GuardContext,
  "position" | "subject" | "identity" | "stateKey" | "fence" | "atCommit" | "effectKey" | "publish"
>;
