/**
 * The runtime entry: the guard, events and positions, with the DynamoDB and memory engines.
 * @module effectively-once
 */
// The runtime entry: guard, events, the DynamoDB and memory engines. Heavy or optional pieces (CDK constructs, the local
// runtime with its Java-based emulator) live behind their own subpath exports and are never imported here.
// Named re-exports of the subpath barrels only, so nothing internal reaches the root (test/exports.test.ts).
export * from "./core/index.js";
export type * from "./core/store.js";
export { unknownWrites } from "./core/store.js";
// The DynamoDB engine: its state stores and its fenced sink.
export * from "./engines/dynamodb/index.js";
export { type MemoryAtomicWrite, MemoryStore, type MemoryStoreOptions } from "./engines/memory/store.js";
export { countRequests, type RequestCounter } from "./observe/request-counter.js";
