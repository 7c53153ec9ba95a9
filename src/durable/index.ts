/**
 * Durable functions, once: a dispatcher guard that starts one durable execution per event, in position order per
 * subject, and step effects that land once (`@aws/durable-execution-sdk-js`, an optional peer dependency).
 * @module effectively-once/durable
 */

export {
  DynamoDBStepEffects,
  type DynamoDBStepEffectsOptions,
} from "../engines/dynamodb/step-effects.js";
export {
  createPostgresStepEffectsTable,
  PostgresStepEffects,
  type PostgresStepEffectsOptions,
  type PostgresStepEffectsTableOptions,
} from "../engines/postgres/step-effects.js";
export { SqliteStepEffects, type SqliteStepEffectsOptions } from "../engines/sqlite/step-effects.js";
export { ValkeyStepEffects, type ValkeyStepEffectsOptions } from "../engines/valkey/step-effects.js";
export {
  type DispatchResult,
  type DurableDispatcherOptions,
  durableEventBridgeDispatcher,
  durableS3Dispatcher,
  durableSqsDispatcher,
} from "./dispatcher.js";
export {
  DurableExecutionConflictError,
  DurableStartError,
  NotDispatchedError,
  PayloadValueError,
  StepEffectsNotReadyError,
} from "./errors.js";
export { DURABLE_EXECUTION_NAME_PATTERN, durableExecutionName } from "./execution-name.js";
export type { DurableInvokeInput, DurableInvokeOutput, LambdaInvoker } from "./lambda-invoke.js";
export {
  canonicalJson,
  type DispatchedExecution,
  type DispatchedPayload,
  dispatchedExecution,
  type StableEvent,
} from "./payload.js";
export {
  type ExecutionRef,
  nextStepIdentity,
  type StepEffectContext,
  type StepEffectOutcome,
  StepEffects,
  type StepHost,
  stepEffectKey,
} from "./step-effects.js";
export type { FenceHolder, StepIdentity, StepRef } from "./step-keys.js";
export type { StepEffectsCommonOptions } from "./step-options.js";
