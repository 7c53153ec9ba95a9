export * from "./errors.js";
export type * from "./event.js";
export * from "./guard.js";
export * from "./identity.js";
export * from "./options.js";
export * from "./position.js";
export * from "./state.js";
export * from "./state-key.js";
