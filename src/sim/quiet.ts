import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";

/** A Powertools-shaped logger and metrics that print nothing: a campaign runs thousands of dispatchers and steps. */
export function quiet(): { logger: Logger; metrics: Metrics } {
  const nothing = () => {};
  const logger = { debug: nothing, info: nothing, warn: nothing, error: nothing, createChild: () => logger };
  const metrics = { addMetric: nothing, addDimension: nothing, publishStoredMetrics: nothing };
  return { logger: logger as unknown as Logger, metrics: metrics as unknown as Metrics };
}
