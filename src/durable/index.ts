/**
 * Durable functions, once: a dispatcher guard that starts one durable execution per event, in position order per
 * subject, and step effects that land once (`@aws/durable-execution-sdk-js`, an optional peer dependency).
 * @module effectively-once/durable
 */

import * as dynamodb from "../engines/dynamodb/step-effects.js";
import * as postgres from "../engines/postgres/step-effects.js";
import * as sqlite from "../engines/sqlite/step-effects.js";
import * as valkey from "../engines/valkey/step-effects.js";

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
  type DurableStepConfig,
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

/*
 * Each engine's step effects, now exported by the engine's own subpath (`effectively-once/engines/<engine>`): the
 * names here stay one minor version, for code that imported them from this subpath.
 */
/** @deprecated Import it from `effectively-once/engines/dynamodb` (or the root entry); removed in 0.3. */
export const DynamoDBStepEffects = dynamodb.DynamoDBStepEffects;
/** @deprecated Import it from `effectively-once/engines/dynamodb` (or the root entry); removed in 0.3. */
export type DynamoDBStepEffects = dynamodb.DynamoDBStepEffects;
/** @deprecated Import it from `effectively-once/engines/dynamodb` (or the root entry); removed in 0.3. */
export type DynamoDBStepEffectsOptions = dynamodb.DynamoDBStepEffectsOptions;
/** @deprecated Import it from `effectively-once/engines/postgres`; removed in 0.3. */
export const PostgresStepEffects = postgres.PostgresStepEffects;
/** @deprecated Import it from `effectively-once/engines/postgres`; removed in 0.3. */
export type PostgresStepEffects = postgres.PostgresStepEffects;
/** @deprecated Import it from `effectively-once/engines/postgres`; removed in 0.3. */
export type PostgresStepEffectsOptions = postgres.PostgresStepEffectsOptions;
/** @deprecated Import it from `effectively-once/engines/postgres`; removed in 0.3. */
export const createPostgresStepEffectsTable = postgres.createPostgresStepEffectsTable;
/** @deprecated Import it from `effectively-once/engines/postgres`; removed in 0.3. */
export type PostgresStepEffectsTableOptions = postgres.PostgresStepEffectsTableOptions;
/** @deprecated Import it from `effectively-once/engines/sqlite`; removed in 0.3. */
export const SqliteStepEffects = sqlite.SqliteStepEffects;
/** @deprecated Import it from `effectively-once/engines/sqlite`; removed in 0.3. */
export type SqliteStepEffects = sqlite.SqliteStepEffects;
/** @deprecated Import it from `effectively-once/engines/sqlite`; removed in 0.3. */
export type SqliteStepEffectsOptions = sqlite.SqliteStepEffectsOptions;
/** @deprecated Import it from `effectively-once/engines/valkey`; removed in 0.3. */
export const ValkeyStepEffects = valkey.ValkeyStepEffects;
/** @deprecated Import it from `effectively-once/engines/valkey`; removed in 0.3. */
export type ValkeyStepEffects = valkey.ValkeyStepEffects;
/** @deprecated Import it from `effectively-once/engines/valkey`; removed in 0.3. */
export type ValkeyStepEffectsOptions = valkey.ValkeyStepEffectsOptions;
