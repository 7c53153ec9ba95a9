/**
 * AWS CDK constructs (`effectively-once/cdk`). aws-cdk-lib and constructs are optional peer dependencies:
 * only this entry point imports them, never the runtime path.
 * @module effectively-once/cdk
 */

export {
  ENV,
  QUEUE_CONSUMER_ACTIONS,
  RUNTIME,
  STATE_KEY_ATTRIBUTE,
  STATE_TABLE_ACTIONS,
  TTL_ATTRIBUTE,
} from "./constants.js";
export * from "./metrics.js";
export { EffectivelyOncePipeline } from "./pipeline.js";
export type { PipelineAlarms } from "./pipeline-alarms.js";
export type { PipelineOutbox } from "./pipeline-parts.js";
export {
  type Architecture,
  DELIVERIES,
  type DeliveryKind,
  type EffectivelyOncePipelineProps,
  type ExternalStateOptions,
  type InlineStateOptions,
  MIN_MAX_RECEIVE_COUNT,
  type OutboxOptions,
  type RecordsTableAction,
  type RecordsTableOptions,
  type Removal,
  STREAM_VIEW_TYPES,
  type StateOptions,
  type StreamViewType,
  type TableStateOptions,
  VISIBILITY_TIMEOUT_FACTOR,
} from "./props.js";
export { LOG_QUERIES } from "./queries.js";

/** @deprecated Renamed `DeliveryKind` (the core's `Delivery` is an event's delivery); removed in 0.3. */
export type Delivery = import("./props.js").DeliveryKind;
