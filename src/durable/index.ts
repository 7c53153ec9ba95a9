/**
 * Durable functions, once: a dispatcher guard that starts one durable execution per event, in position order per
 * subject, and step effects that land once (`@aws/durable-execution-sdk-js`, an optional peer dependency).
 * @module effectively-once/durable
 */
export {
  type DispatchResult,
  type DurableDispatcherOptions,
  durableEventBridgeDispatcher,
  durableS3Dispatcher,
  durableSqsDispatcher,
} from "./dispatcher.js";
export { DurableExecutionConflictError, DurableStartError, NotDispatchedError } from "./errors.js";
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
  DynamoDBStepEffects,
  type DynamoDBStepEffectsOptions,
  type ExecutionRef,
  type StepEffectContext,
  type StepEffectOutcome,
  type StepHost,
} from "./step-effects.js";
export type { FenceHolder } from "./step-items.js";
