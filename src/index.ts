// The runtime entry: guard, events, stores and sinks. Heavy or optional pieces (CDK constructs, the local
// runtime with its Java-based emulator) live behind their own subpath exports and are never imported here.
export * from "./core/index.js";
export * from "./observe/request-counter.js";
export * from "./sinks/dynamodb.js";
export type * from "./stores/contract.js";
export * from "./stores/dynamodb/index.js";
export * from "./stores/memory.js";
