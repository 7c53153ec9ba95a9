/**
 * The names the adapters emit and the CDK construct alarms on. No imports: the construct loads this file
 * without loading the runtime (Powertools, the AWS SDK) into a CDK app.
 */

/**
 * Counters, one per way a delivery can end (every delivery is counted), plus a few events
 * worth an alarm. Emitted as CloudWatch EMF through Powertools Metrics, dimension `pipeline`.
 */
export const COUNTERS = [
  /** The handler ran and its result was committed. */
  "processed",
  /** The same event was already committed: acknowledged, stored result replayed. */
  "duplicate",
  /** A newer event of the subject was already claimed or committed: acknowledged, nothing done. */
  "stale",
  /** An older event of the subject still ran after the busy policy: failed for a later redelivery. */
  "busy",
  /** The same event ran elsewhere after the in-flight policy: failed for a later redelivery. */
  "inFlight",
  /** This run took the claim from a live older run (busy policy `supersede`). */
  "superseded",
  /** This run's claim was taken over meanwhile: nothing committed, acknowledged. */
  "leaseLost",
  /** This run claimed an event whose previous holder's lease had expired (a crashed or frozen run). */
  "tookOver",
  /** The handler threw (or the store refused its commit for good): failed for a later redelivery. */
  "failed",
  /** The store did not confirm a claim, lease or commit (an outage): not acknowledged, redelivered. */
  "unconfirmed",
  /** Input that is no event (typed MalformedEventError): dead-lettered via the queue, or acknowledged. */
  "malformed",
  /** `s3:TestEvent`: acknowledged. */
  "testEvent",
  /** Not processed in this invocation (an earlier record of its FIFO group failed, or no time was left). */
  "deferred",
] as const;

export type CounterName = (typeof COUNTERS)[number];

/** Value metrics: one data point per record. */
export const RECEIVE_COUNT_METRIC = "receiveCount";
export const HANDLER_DURATION_METRIC = "handlerDuration";
export const PIPELINE_DIMENSION = "pipeline";
/** Powertools Metrics adds this dimension to every metric; its value is POWERTOOLS_SERVICE_NAME. */
export const SERVICE_DIMENSION = "service";
export const DEFAULT_NAMESPACE = "EffectivelyOnce";
