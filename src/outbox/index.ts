/**
 * The transactional outbox: messages a handler publishes (`ctx.publish`) are written in its commit and sent after it
 * by a relay, each with a message id fixed at the commit (docs/effects.md#publish-at-commit-the-outbox).
 * @module effectively-once/outbox
 */
export { type AwsCommandClient, type AwsOutboxSenderOptions, awsOutboxSender } from "./aws-sender.js";
export { EventBridgeEntryFailedError, OutboxEntryInvalidError, OutboxSendError } from "./errors.js";
export { OUTBOX_MESSAGE_ID_ATTRIBUTE, outboxMessageId } from "./message-id.js";
export type { Publish } from "./publish.js";
export {
  type OutboxRelayOptions,
  type RelayRound,
  type RunningRelay,
  relayOutbox,
  startOutboxRelay,
} from "./relay.js";
export type * from "./types.js";
