/**
 * The Valkey / Redis engine (install `ioredis`): the store and fenced sink, one server-side script per step.
 * @module effectively-once/engines/valkey
 */
// The Valkey / Redis state store and fenced sink (ioredis, an optional peer). Named exports only; scripts, key
// codecs and the script runner stay internal.

export { ValkeyStateAdmin } from "./admin.js";
export { isValkeyAtomicWrite, type ValkeyAtomicWrite, type ValkeyWriteOp } from "./atomic-write.js";
export type { ValkeyClient } from "./client.js";
export { isRetryableValkeyError, ReplicasNotReachedError, ValkeyWriteRefusedError } from "./errors.js";
export { valkeyHashTag } from "./keys.js";
export type { ValkeyStoreOptions } from "./options.js";
export { ValkeyOutbox, type ValkeyOutboxOptions } from "./outbox.js";
export type { WaitForReplicas } from "./runner.js";
export {
  ValkeyFencedSink,
  type ValkeyFencedSinkOptions,
  type ValkeyFenceSource,
  valkeyWrite,
} from "./sink.js";
export { ValkeyStepEffects, type ValkeyStepEffectsOptions } from "./step-effects.js";
export { ValkeyStore } from "./store.js";
