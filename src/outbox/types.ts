import type { AtomicWrite } from "../core/store.js";

/**
 * The outbox's vocabulary: where a message goes, the entry a commit adds, the writer an engine folds into its
 * commit and the reader a relay claims entries through (docs/effects.md#publish-at-commit-the-outbox).
 */

/** An SQS queue: FIFO when the URL ends in `.fifo` (group = the entry's group, deduplication id = its message id). */
export interface SqsDestination {
  readonly kind: "sqs";
  readonly queueUrl: string;
}

/** An SNS topic: FIFO when the ARN ends in `.fifo` (as for SQS). */
export interface SnsDestination {
  readonly kind: "sns";
  readonly topicArn: string;
}

/**
 * An EventBridge bus: the message must be a JSON object (an event's `detail`); the relay adds the message id to it
 * as `eonceMessageId` (EventBridge has no message attributes).
 */
export interface EventBridgeDestination {
  readonly kind: "eventbridge";
  /** A bus name or ARN; `default` for the account's default bus. */
  readonly eventBusName: string;
  readonly source: string;
  readonly detailType: string;
}

/** Where a published message goes. */
export type Destination = SqsDestination | SnsDestination | EventBridgeDestination;

/** Per message of `ctx.publish`. */
export interface PublishOptions {
  /**
   * Names the message among the event's messages (its message id is derived from the event and this name).
   * Default: `#1`, `#2`, … in the order of the run's `publish` calls. Unique within one run.
   */
  name?: string;
  /** FIFO destinations: the message group. Default: the event's subject (so a subject's messages stay in order). */
  groupId?: string;
  /** String message attributes (SQS, SNS); the relay adds `eonceMessageId`. */
  attributes?: Readonly<Record<string, string>>;
}

/**
 * One message of a committed event, as the outbox keeps it until a relay has sent it. Every field is fixed at the
 * commit, so every relay (and every retry of one) sends the same message with the same id.
 */
export interface OutboxEntry {
  /** `eo1_…` (src/outbox/message-id.ts): derived from the event's subject and identity and the message's name. */
  readonly messageId: string;
  /** The publishing event's subject: a subject's entries are sent in `order`. */
  readonly subject: string;
  /**
   * Commit order within the subject: the commit's fence (16 digits) and the message's index in it (4 digits), so
   * string order is commit order (`outboxOrder`).
   */
  readonly order: string;
  readonly destination: Destination;
  /** The message: a string as given, anything else as JSON. */
  readonly body: string;
  /** FIFO destinations' message group. */
  readonly groupId: string;
  readonly attributes?: Readonly<Record<string, string>>;
  /** When the commit was made (the publishing claim's clock). */
  readonly createdAtMs: number;
}

/**
 * The engine side of an outbox, given to the guard (`outbox` option): the write that adds one entry, folded into
 * the commit by the guard's store (its `canFold` must accept it), so that the entry exists if and only if the event
 * committed.
 */
export interface Outbox {
  /** The engine whose stores fold its writes (as `AtomicWrite.engine`). */
  readonly engine: string;
  /** The write that adds `entry`, made for the commit of state key `stateKey` (engines that place it by key). */
  entryWrite(entry: OutboxEntry, stateKey: string): AtomicWrite;
}

/** An entry a relay holds: no other relay sends it until `leaseUntilMs`. */
export interface ClaimedEntry extends OutboxEntry {
  /** The relay that holds it. */
  readonly owner: string;
  readonly leaseUntilMs: number;
}

/** What a relay asks of `OutboxReader.claim`. */
export interface ClaimEntriesRequest {
  /** At most this many entries. */
  limit: number;
  /** The relay's name: unique per relay process (two relays racing must not share one). */
  owner: string;
  /** The claim holds until this time; after it, another relay may claim the entry again (and send it again). */
  leaseUntilMs: number;
  /** The relay's clock: leases that ended before it are free. */
  nowMs: number;
}

/**
 * The relay side of an outbox. Safe in several copies: a claim is one conditional write per entry (or one script),
 * so two relays never hold an entry at once; a relay that crashed after sending leaves its lease to run out, and
 * the entry is sent again, with the same message id.
 */
export interface OutboxReader {
  /**
   * Entries not sent and not held, each the oldest unsent entry of its subject (so a subject's entries are sent
   * one after the other in commit order, whichever relay sends them); claimed for `owner` until `leaseUntilMs`.
   */
  claim(req: ClaimEntriesRequest): Promise<ClaimedEntry[]>;
  /**
   * Marks `entry` sent (or removes it): true when `owner` still held it, or it was already marked; false when
   * another relay claimed it since (that relay sends it again, with the same id).
   */
  markSent(entry: ClaimedEntry, sentAtMs: number): Promise<boolean>;
  /** Entries not yet sent (operators, tests, the simulator's checks). */
  pending(): Promise<OutboxEntry[]>;
}

/** Sends one entry to its destination, with its message id; throws when the destination did not take it. */
export interface OutboxSender {
  /** Resolves once the destination took the message; rejects otherwise (the relay sends it again later). */
  send(entry: OutboxEntry): Promise<void>;
}
