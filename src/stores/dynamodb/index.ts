// The DynamoDB state stores. Named exports only (test/exports.test.ts pins them); item codecs stay internal.

export { INLINE_RESERVED_PREFIX } from "../inline-prefix.js";
export { type DynamoDBAtomicWrite, isDynamoDBAtomicWrite } from "./atomic-write.js";
export {
  INLINE_STATE_ATTRIBUTES,
  InlineDynamoDBStore,
  type InlineDynamoDBStoreOptions,
  type InlineRowSource,
  type InlineRowWrite,
} from "./inline.js";
export {
  type CreateStateTableOptions,
  createStateTable,
  createTableIfMissing,
  STATE_KEY_ATTRIBUTE,
  TTL_ATTRIBUTE,
} from "./schema.js";
export { DynamoDBStore, type DynamoDBStoreOptions } from "./store.js";
