import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";

import {
  type CounterName,
  DEFAULT_NAMESPACE,
  HANDLER_DURATION_METRIC,
  PIPELINE_DIMENSION,
  RECEIVE_COUNT_METRIC,
} from "./metric-names.js";

export * from "./metric-names.js";

/**
 * The Powertools instance used when the user passes none: namespace and service from
 * POWERTOOLS_METRICS_NAMESPACE / POWERTOOLS_SERVICE_NAME when set, else `EffectivelyOnce` and the pipeline.
 */
export function defaultMetrics(pipeline?: string): Metrics {
  return new Metrics({
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || DEFAULT_NAMESPACE,
    serviceName: process.env.POWERTOOLS_SERVICE_NAME || pipeline || "effectively-once",
  });
}

/**
 * Accumulates one invocation's metrics and flushes them as one EMF line. Counters are summed here
 * rather than added per record, so a batch of ten prints `processed: 10`, not ten values.
 */
export class InvocationMetrics {
  readonly #metrics: Metrics;
  readonly #pipeline: string;
  readonly #counts = new Map<CounterName, number>();
  readonly #receiveCounts: number[] = [];
  readonly #durationsMs: number[] = [];

  constructor(metrics: Metrics, pipeline: string) {
    this.#metrics = metrics;
    this.#pipeline = pipeline;
  }

  /** Adds `n` to a counter. */
  count(name: CounterName, n = 1): void {
    this.#counts.set(name, (this.#counts.get(name) ?? 0) + n);
  }

  /** Records one SQS message's receive count. */
  receiveCount(n: number): void {
    this.#receiveCounts.push(n);
  }

  /** Records one handler run's duration. */
  handlerDuration(ms: number): void {
    this.#durationsMs.push(Math.round(ms));
  }

  /** What flush() will emit, for tests and reports. */
  snapshot(): {
    counts: Partial<Record<CounterName, number>>;
    receiveCounts: number[];
    durationsMs: number[];
  } {
    return {
      counts: Object.fromEntries(this.#counts),
      receiveCounts: [...this.#receiveCounts],
      durationsMs: [...this.#durationsMs],
    };
  }

  /**
   * Adds everything to the Powertools instance and publishes it (EMF on stdout). The dimension is added
   * per flush (Powertools clears non-default dimensions on publish), so a user's instance keeps its defaults.
   */
  flush(): void {
    const m = this.#metrics;
    if (this.#counts.size + this.#receiveCounts.length + this.#durationsMs.length === 0) return;
    m.addDimension(PIPELINE_DIMENSION, this.#pipeline);
    for (const [name, n] of this.#counts) m.addMetric(name, MetricUnit.Count, n);
    for (const n of this.#receiveCounts) m.addMetric(RECEIVE_COUNT_METRIC, MetricUnit.Count, n);
    for (const ms of this.#durationsMs) m.addMetric(HANDLER_DURATION_METRIC, MetricUnit.Milliseconds, ms);
    this.#counts.clear();
    this.#receiveCounts.length = 0;
    this.#durationsMs.length = 0;
    m.publishStoredMetrics();
  }
}
