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

export const OUTCOME_METRICS = COUNTERS;
export type OutcomeMetric = (typeof OUTCOME_METRICS)[number];

export type PipelineMetric = OutcomeMetric | typeof RECEIVE_COUNT_METRIC | typeof HANDLER_DURATION_METRIC;
