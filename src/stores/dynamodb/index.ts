export * from "./atomic-write.js";
export * from "./inline.js";
export * from "./schema.js";
export * from "./store.js";
