import {
  COUNTERS,
  type HANDLER_DURATION_METRIC,
  type RECEIVE_COUNT_METRIC,
} from "../observe/metric-names.js";

/** The adapters' metric names (src/observe/metric-names.ts, which imports nothing, so no runtime is loaded). */
export {
  DEFAULT_NAMESPACE as METRIC_NAMESPACE,
  HANDLER_DURATION_METRIC,
  PIPELINE_DIMENSION,
  RECEIVE_COUNT_METRIC,
  SERVICE_DIMENSION,
} from "../observe/metric-names.js";

/**
 * Every outcome counter the adapters emit, as CloudWatch metric names (the dashboard's and alarms'
 * vocabulary).
 */
export const OUTCOME_METRICS = COUNTERS;
/** One outcome counter's metric name. */
export type OutcomeMetric = (typeof OUTCOME_METRICS)[number];

/** Any metric a pipeline emits: an outcome counter, `receiveCount` or `handlerDuration`. */
export type PipelineMetric = OutcomeMetric | typeof RECEIVE_COUNT_METRIC | typeof HANDLER_DURATION_METRIC;
