/**
 * The DynamoDB engine: the state table store, inline state in your rows, the fenced sink.
 * @module effectively-once/engines/dynamodb
 */
// The DynamoDB engine: state stores (state table, inline) and the fenced sink. Named exports only (test/exports.test.ts pins them); item codecs stay internal.

export { INLINE_RESERVED_PREFIX } from "../../core/inline-prefix.js";
export { type DynamoDBAtomicWrite, isDynamoDBAtomicWrite } from "./atomic-write.js";
export {
  INLINE_STATE_ATTRIBUTES,
  type InlineDynamoDBRowSource,
  type InlineDynamoDBRowWrite,
  InlineDynamoDBStore,
  type InlineDynamoDBStoreOptions,
  type InlineRowSource,
  type InlineRowWrite,
} from "./inline-store.js";
export {
  DynamoDBOutbox,
  type DynamoDBOutboxOptions,
  type DynamoDBOutboxWrite,
  isDynamoDBOutboxWrite,
} from "./outbox.js";
export {
  type CreateOutboxTableOptions,
  createOutboxTable,
  OUTBOX_ATTRIBUTES,
  OUTBOX_PENDING_INDEX,
  OUTBOX_UNSENT_INDEX,
} from "./outbox-schema.js";
export {
  type OutboxStreamHandler,
  type OutboxStreamHandlerOptions,
  outboxStreamHandler,
} from "./outbox-stream-relay.js";
export {
  type CreateStateTableOptions,
  createStateTable,
  createTableIfMissing,
  STATE_KEY_ATTRIBUTE,
  TTL_ATTRIBUTE,
} from "./schema.js";
export {
  DynamoDBFencedSink,
  type DynamoDBFencedSinkOptions,
  type DynamoDBUpdateEffect,
  type FenceSource,
  type KeyValue,
  type RowKey,
  type SinkWriteStatus,
  updateEffect,
} from "./sink.js";
export { DynamoDBStepEffects, type DynamoDBStepEffectsOptions } from "./step-effects.js";
export { DynamoDBStore, type DynamoDBStoreOptions } from "./store.js";
