/**
 * Metric names and dimensions the Lambda adapters emit (src/observe/metrics.ts), repeated here so the
 * construct does not import the runtime (Powertools) into a CDK app. test/cdk/metrics.test.ts keeps the
 * two in sync.
 */
export const METRIC_NAMESPACE = "EffectivelyOnce";
export const PIPELINE_DIMENSION = "pipeline";
/** Powertools Metrics adds this dimension to every metric; its value is POWERTOOLS_SERVICE_NAME. */
export const SERVICE_DIMENSION = "service";

export const OUTCOME_METRICS = [
  "processed",
  "duplicate",
  "stale",
  "busy",
  "inFlight",
  "superseded",
  "leaseLost",
  "tookOver",
  "failed",
  "malformed",
  "testEvent",
  "deferred",
] as const;

export type OutcomeMetric = (typeof OUTCOME_METRICS)[number];

export const RECEIVE_COUNT_METRIC = "receiveCount";
export const HANDLER_DURATION_METRIC = "handlerDuration";

export type PipelineMetric = OutcomeMetric | typeof RECEIVE_COUNT_METRIC | typeof HANDLER_DURATION_METRIC;
