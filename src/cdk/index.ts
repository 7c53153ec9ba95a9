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
// The construct's props, their parts and the values they take (props.ts holds nothing else).
export * from "./props.js";
export { LOG_QUERIES } from "./queries.js";

/** @deprecated Renamed `DeliveryKind` (the core's `Delivery` is an event's delivery); removed in 0.3. */
export type Delivery = import("./props.js").DeliveryKind;
