import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";

/** The wrappers' logs and metrics in the simulator's histories go nowhere: the checks read the reports and stores. */
let silentLogger: Logger | undefined;
const SILENT_METRICS = {
  addDimension() {},
  addMetric() {},
  publishStoredMetrics() {},
} as unknown as Metrics;

/** A logger and a metrics instance that print nothing, for the wrappers a history drives. */
export function silentObservability(): { logger: Logger; metrics: Metrics } {
  silentLogger ??= new Logger({ logLevel: "SILENT" });
  return { logger: silentLogger, metrics: SILENT_METRICS };
}
