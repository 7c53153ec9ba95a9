/**
 * AWS CDK constructs (`effectively-once/cdk`). aws-cdk-lib and constructs are optional peer dependencies:
 * only this entry point imports them, never the runtime path.
 */

export type { PipelineAlarms } from "./alarms.js";
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
export {
  type Architecture,
  DELIVERIES,
  type Delivery,
  type EffectivelyOncePipelineProps,
  MIN_MAX_RECEIVE_COUNT,
  type RecordsTableAction,
  type RecordsTableOptions,
  type Removal,
  VISIBILITY_TIMEOUT_FACTOR,
} from "./props.js";
export { LOG_QUERIES } from "./queries.js";
