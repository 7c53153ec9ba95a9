import { effectKey } from "../core/effect-key.js";
import { OptionsError } from "../core/errors.js";

/**
 * The message attribute (SQS, SNS) and EventBridge `detail` field the relay puts each message's id in; a guarded
 * consumer takes it as the message's identity without configuration (src/sources/payload.ts).
 */
export const OUTBOX_MESSAGE_ID_ATTRIBUTE = "eonceMessageId";

/** A message's own attributes at most: SQS and SNS take 10, and the id is one of them. */
export const MAX_OUTBOX_ATTRIBUTES = 9;

/** The most messages one commit publishes (the entry's index has 4 digits in `outboxOrder`). */
export const MAX_MESSAGES_PER_COMMIT = 10_000;

/**
 * The id of message `name` of the event (`subject`, `identity`): `eo1_` and 40 base64url characters, a SHA-256 as
 * `effectKey`'s but tagged as a message's (so it never equals the event's effect keys). Fixed at the commit and kept
 * in the entry, so every relay sends the message with it; a pure function of the event and the name, so a script
 * can find a message's id again.
 */
export function outboxMessageId(subject: string, identity: string, name: string): string {
  return effectKey({ kind: "message", subject, identity }, name);
}

/** The fence's digits: 2^53 has 16. */
const FENCE_DIGITS = 16;
const INDEX_DIGITS = 4;

/** An entry's `order`: the commit's fence and the message's index, zero-padded, so string order is commit order. */
export function outboxOrder(fence: number, index: number): string {
  if (!Number.isSafeInteger(fence) || fence < 0) throw new OptionsError(`outboxOrder: bad fence ${fence}`);
  if (!Number.isSafeInteger(index) || index < 0 || index >= MAX_MESSAGES_PER_COMMIT) {
    throw new OptionsError(`a commit publishes at most ${MAX_MESSAGES_PER_COMMIT} messages`);
  }
  return `${String(fence).padStart(FENCE_DIGITS, "0")}.${String(index).padStart(INDEX_DIGITS, "0")}`;
}

/**
 * How an outbox entry's write is named in a commit's write outcomes (`WriteOutcome.description`), the same on every
 * engine: so that a caller can tell the event's own effects from its messages (an inline commit whose row write is
 * stale still lands its entries: the event committed).
 */
export function outboxWriteDescription(messageId: string): string {
  return `outbox ${messageId}`;
}

/** Whether a write outcome is an outbox entry's (`outboxWriteDescription`). */
export function isOutboxWrite(outcome: { description: string }): boolean {
  return /^outbox eo1_[A-Za-z0-9_-]{40}$/.test(outcome.description);
}
