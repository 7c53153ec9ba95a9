import { countersOf, DELIVERY_STATUSES } from "../core/outcomes.js";

/**
 * The names the adapters emit and the CDK construct alarms on. Imports only the outcome table (which imports
 * nothing): the construct loads this file without loading the runtime (Powertools, the AWS SDK) into a CDK app.
 */

/**
 * Counters, one per way a delivery can end (src/core/outcomes.ts: every delivery is counted), plus two events
 * worth an alarm: `superseded` (this run took the claim from a live older run, busy policy `supersede`) and
 * `tookOver` (this run claimed an event whose previous holder's lease had expired: a crashed or frozen run).
 * Emitted as CloudWatch EMF through Powertools Metrics, dimension `pipeline`.
 */
export const COUNTERS = [...countersOf(DELIVERY_STATUSES), "superseded", "tookOver"] as const;

/** One counter the adapters emit. */
export type CounterName = (typeof COUNTERS)[number];

/** Value metrics: one data point per record. */
export const RECEIVE_COUNT_METRIC = "receiveCount";
/** The handler's duration per event, in milliseconds. */
export const HANDLER_DURATION_METRIC = "handlerDuration";
/** The dimension every metric carries: the pipeline's name. */
export const PIPELINE_DIMENSION = "pipeline";
/** Powertools Metrics adds this dimension to every metric; its value is POWERTOOLS_SERVICE_NAME. */
export const SERVICE_DIMENSION = "service";
/** The metrics' namespace unless POWERTOOLS_METRICS_NAMESPACE or your Metrics instance says otherwise. */
export const DEFAULT_NAMESPACE = "EffectivelyOnce";
