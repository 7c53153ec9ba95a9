import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";

import {
  type CounterName,
  DEFAULT_NAMESPACE,
  HANDLER_DURATION_METRIC,
  PIPELINE_DIMENSION,
  RECEIVE_COUNT_METRIC,
} from "./metric-names.js";

export * from "./metric-names.js";

/** Below Powertools' 100 values of one metric, at which it publishes by itself (`MAX_METRIC_VALUES_SIZE`). */
const VALUES_PER_PUBLISH = 99;

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
 * Whether Powertools would print nothing. `isDisabled` is protected in its types (public at run time since 2.x): read
 * defensively, so stand-ins shaped like Metrics (tests, the simulator) and a version without it take the full path.
 */
function isDisabled(m: Metrics): boolean {
  const check = (m as unknown as { isDisabled?: () => unknown }).isDisabled;
  return typeof check === "function" && check.call(m) === true;
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
   * per publish (Powertools clears non-default dimensions on publish), so a user's instance keeps its defaults.
   * Powertools publishes by itself when one metric holds 100 values, before the explicit publish, and without the
   * dimension added after it: a stream batch of 100 records has 100 durations. So the values go out in chunks of at
   * most `VALUES_PER_PUBLISH` per metric, one EMF line each, every line with the dimension.
   */
  flush(): void {
    const m = this.#metrics;
    if (this.#counts.size + this.#receiveCounts.length + this.#durationsMs.length === 0) return;
    // Disabled (POWERTOOLS_METRICS_DISABLED, dev mode): Powertools would print nothing, but each call still costs
    // environment reads and stores per value; the invocation's values are dropped as its publish would drop them.
    if (isDisabled(m)) {
      this.#clear();
      return;
    }
    const longest = Math.max(this.#receiveCounts.length, this.#durationsMs.length);
    for (let from = 0; from === 0 || from < longest; from += VALUES_PER_PUBLISH) {
      const to = from + VALUES_PER_PUBLISH;
      m.addDimension(PIPELINE_DIMENSION, this.#pipeline);
      if (from === 0) for (const [name, n] of this.#counts) m.addMetric(name, MetricUnit.Count, n);
      for (const n of this.#receiveCounts.slice(from, to))
        m.addMetric(RECEIVE_COUNT_METRIC, MetricUnit.Count, n);
      for (const ms of this.#durationsMs.slice(from, to))
        m.addMetric(HANDLER_DURATION_METRIC, MetricUnit.Milliseconds, ms);
      m.publishStoredMetrics();
    }
    this.#clear();
  }

  #clear(): void {
    this.#counts.clear();
    this.#receiveCounts.length = 0;
    this.#durationsMs.length = 0;
  }
}
