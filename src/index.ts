// The runtime entry: guard, events, stores and sinks. Heavy or optional pieces (CDK constructs, the local
// runtime with its Java-based emulator) live behind their own subpath exports and are never imported here.
// Named re-exports of the subpath barrels only, so nothing internal reaches the root (test/exports.test.ts).
export * from "./core/index.js";
export type * from "./core/store.js";
export { unknownWrites } from "./core/store.js";
export { countRequests, type RequestCounter } from "./observe/request-counter.js";
export {
  DynamoDBFencedSink,
  type DynamoDBFencedSinkOptions,
  type DynamoDBUpdateEffect,
  type FenceSource,
  type KeyValue,
  type RowKey,
  type SinkWriteStatus,
  updateEffect,
} from "./sinks/dynamodb.js";
export * from "./stores/dynamodb/index.js";
export { type MemoryAtomicWrite, MemoryStore, type MemoryStoreOptions } from "./stores/memory.js";
