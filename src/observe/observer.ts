import { Logger, LogLevelThreshold } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { MalformedEventError } from "../core/errors.js";
import type { Delivery } from "../core/event.js";
import type { GuardedEvent, GuardOutcome, GuardTrace } from "../core/guard.js";
import { OUTCOMES } from "../core/outcomes.js";
import { errorToLocalRun } from "./local-hook.js";
import { defaultMetrics, InvocationMetrics } from "./metrics.js";

/**
 * Structured logs and metrics for deliveries. Every line is one JSON object (Powertools Logger) with
 * `correlation_id` (the delivery's: S3 request id, SQS message id, EventBridge id or a named message
 * attribute; the Lambda request id for invocation-level lines). Messages are meant to be grepped:
 *
 *   processed <subject>
 *   duplicate skipped for <subject>
 *   stale event skipped for <subject> (<position> < <current>)
 *   superseded older event of <subject> (<old> -> <new>)
 *   lease lost for <subject>: ...
 *   handler failed for <subject> ...
 *   malformed message <id>: ...   /   malformed record acknowledged without retry: ...
 *   s3:TestEvent acknowledged for bucket <bucket>
 */
export const CORRELATION_ID_KEY = "correlation_id";

/** The options of `Observer`. */
export interface ObserverOptions {
  /** A Powertools Logger; default one with service POWERTOOLS_SERVICE_NAME or the pipeline. */
  logger?: Logger;
  /** A Powertools Metrics instance; default namespace `EffectivelyOnce` (or POWERTOOLS_METRICS_NAMESPACE). */
  metrics?: Metrics;
  /** Value of the `pipeline` metric dimension and a field on every line. Default: the Lambda function name. */
  pipeline?: string;
}

type Fields = Record<string, unknown>;

/**
 * The logs and metrics of one wrapper: its Powertools Logger and Metrics (created at the first invocation
 * when not given).
 */
export class Observer {
  readonly #pipeline: string | undefined;
  #logger: Logger | undefined;
  #metrics: Metrics | undefined;

  constructor(options: ObserverOptions = {}) {
    this.#pipeline = options.pipeline;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
  }

  /**
   * The Logger; the default one is created at the first invocation (service POWERTOOLS_SERVICE_NAME or the
   * pipeline), so nothing is built at import time.
   */
  loggerFor(pipeline: string): Logger {
    this.#logger ??= new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME || pipeline });
    return this.#logger;
  }

  /** The Metrics instance; the default one is created at the first invocation (it needs the pipeline). */
  metricsFor(pipeline: string): Metrics {
    this.#metrics ??= defaultMetrics(pipeline);
    return this.#metrics;
  }

  /**
   * One invocation: `pipeline` falls back to `EONCE_PIPELINE` (set by the CDK construct, so alarms and dashboards
   * match without code), then the function name; `requestId` correlates invocation-level lines.
   */
  invocation(args: { functionName?: string; requestId?: string } = {}): InvocationObserver {
    const pipeline =
      this.#pipeline ??
      (process.env.EONCE_PIPELINE || undefined) ??
      args.functionName ??
      process.env.AWS_LAMBDA_FUNCTION_NAME ??
      "default";
    const metrics = new InvocationMetrics(this.metricsFor(pipeline), pipeline);
    return new InvocationObserver(this.loggerFor(pipeline), metrics, pipeline, args.requestId);
  }
}

/** Logs and counts everything about one invocation; `flush` publishes its metrics. */
export class InvocationObserver {
  readonly logger: Logger;
  readonly metrics: InvocationMetrics;
  readonly pipeline: string;
  /**
   * The logger is at SILENT when the invocation starts: no line is built for it (Powertools would drop each one after
   * reading the environment). Read once per invocation, as Powertools' sampling sets the level per invocation.
   */
  readonly silent: boolean;
  readonly #requestId: string;

  constructor(logger: Logger, metrics: InvocationMetrics, pipeline: string, requestId = "") {
    this.logger = logger;
    this.metrics = metrics;
    this.pipeline = pipeline;
    this.#requestId = requestId;
    // Stand-ins shaped like a Logger (tests, the simulator) may have no level: they get every line.
    const level: unknown = (logger as { level?: unknown }).level;
    this.silent = typeof level === "number" && level >= LogLevelThreshold.SILENT;
  }

  /** The observer of one delivery unit of this invocation. */
  delivery(delivery: Delivery): DeliveryObserver {
    return new DeliveryObserver(this, delivery);
  }

  /** Input that is no known invocation at all: nothing in it can be acknowledged one by one. */
  unknownInvocation(error: unknown): void {
    this.metrics.count("malformed");
    this.log("error", `unknown invocation rejected: ${messageOf(error)}`, { error });
  }

  /** Logs one line with the correlation id and the pipeline. */
  log(level: "debug" | "info" | "warn" | "error", message: string, fields: Fields = {}): void {
    if (this.silent) return;
    this.logger[level](message, {
      [CORRELATION_ID_KEY]: this.#requestId,
      pipeline: this.pipeline,
      ...fields,
    });
  }

  /** Publishes the invocation's metrics. */
  flush(): void {
    this.metrics.flush();
  }
}

/** Logs and counts everything about one delivery unit, each line carrying its correlation id. */
export class DeliveryObserver {
  readonly #inv: InvocationObserver;
  readonly delivery: Delivery;
  #child: Logger | undefined;

  constructor(inv: InvocationObserver, delivery: Delivery) {
    this.#inv = inv;
    this.delivery = delivery;
  }

  get correlationId(): string {
    return this.delivery.correlationId;
  }

  /** A child of the user's logger with the correlation id as a persistent key: what the user's handler logs with. */
  childLogger(): Logger {
    this.#child ??= this.#inv.logger.createChild({
      persistentKeys: { [CORRELATION_ID_KEY]: this.correlationId, pipeline: this.#inv.pipeline },
    });
    return this.#child;
  }

  /** Logs one line with the correlation id and the pipeline. */
  log(level: "debug" | "info" | "warn" | "error", message: string, fields: Fields = {}): void {
    if (this.#inv.silent) return;
    this.#inv.logger[level](message, Object.assign(this.#lineBase(), fields));
  }

  /** The fields every line about this delivery starts with (a new object: the line's own). */
  #lineBase(): Fields {
    const d = this.delivery;
    const base: Fields = {
      [CORRELATION_ID_KEY]: d.correlationId,
      pipeline: this.#inv.pipeline,
      envelope: d.envelope,
      recordIndex: d.recordIndex,
    };
    if (d.sqs) {
      base.messageId = d.sqs.messageId;
      base.receiveCount = d.sqs.receiveCount;
      if (d.sqs.messageGroupId !== undefined) base.messageGroupId = d.sqs.messageGroupId;
    }
    if (d.stream) {
      base.sequenceNumber = d.stream.sequenceNumber;
      if (d.stream.shardId !== undefined) base.shardId = d.stream.shardId;
    }
    return base;
  }

  /** SQS: the receive count as a metric (alarm on its maximum) and a debug line. */
  received(): void {
    const sqs = this.delivery.sqs;
    if (!sqs) return;
    this.#inv.metrics.receiveCount(sqs.receiveCount);
    this.log("debug", `received ${sqs.messageId} (receive ${sqs.receiveCount})`);
  }

  /** Logged once per receive; `route` says what happens to it. */
  malformed(error: unknown, route: "dead-letter" | "acknowledge"): void {
    this.#inv.metrics.count("malformed");
    const text = messageOf(error);
    error = briefError(error);
    if (route === "acknowledge") {
      this.log("error", `malformed record acknowledged without retry: ${text}`, {
        status: "malformed",
        error,
        hint: "retrying the same bytes cannot help; the record is counted in the malformed metric",
      });
      return;
    }
    const id = this.delivery.sqs?.messageId ?? this.correlationId;
    const receives = this.delivery.sqs?.receiveCount ?? 1;
    this.log("error", `malformed message ${id}: ${text}`, {
      status: "malformed",
      error,
      hint:
        `reported as a batch item failure (receive ${receives}): the queue's redrive policy dead-letters it ` +
        "after maxReceiveCount; a queue without a redrive policy retries it until its retention period ends",
    });
  }

  /** An `s3:TestEvent`: acknowledged, counted and logged. */
  testEvent(bucket: string): void {
    this.#inv.metrics.count("testEvent");
    this.log("info", `s3:TestEvent acknowledged for bucket ${bucket}`, { status: "test-event" });
  }

  /** A delivery left for a later invocation (e.g. after a failure in its FIFO group): counted and logged. */
  deferred(reason: string): void {
    this.#inv.metrics.count("deferred");
    this.log("warn", `deferred ${this.delivery.sqs?.messageId ?? this.correlationId}: ${reason}`, {
      status: "deferred",
    });
  }

  /** Records the handler's duration for one event. */
  handlerDuration(ms: number): void {
    this.#inv.metrics.handlerDuration(ms);
  }

  /** The store (or something else outside the handler) failed: transient, the delivery is retried. */
  storeFailed(subject: string, error: unknown): void {
    this.#inv.metrics.count("failed");
    errorToLocalRun(error);
    this.log("error", `state store failed for ${subject}; delivery failed for a retry`, {
      status: "failed",
      error,
    });
  }

  /** The guard's trace hook, bound to this delivery and event. */
  trace(event: GuardedEvent): (trace: GuardTrace) => void {
    const subject = event.subject;
    return (t) => {
      if (t.type === "claimed") {
        if (t.superseded !== undefined) {
          this.#inv.metrics.count("superseded");
          this.log(
            "info",
            `superseded older event of ${subject} (${t.superseded} -> ${event.position ?? "-"})`,
            {
              subject,
              fence: t.fence,
            },
          );
        }
        if (t.tookOver) {
          this.#inv.metrics.count("tookOver");
          this.log("warn", `took over ${subject} from a run whose lease expired (attempt ${t.attempt})`, {
            subject,
            fence: t.fence,
            attempt: t.attempt,
          });
        }
      } else if (t.type === "waiting") {
        this.log("debug", `waiting for ${subject} (${t.reason}, ${t.delayMs} ms)`, { subject });
      } else if (t.type === "heartbeat" && !t.ok) {
        this.log(
          "warn",
          t.error === undefined
            ? `lease renewal refused for ${subject}: aborting the handler`
            : `lease renewal failed for ${subject}: retried; the handler is aborted if the lease ends unconfirmed`,
          { subject, fence: t.fence, ...(t.error !== undefined ? { error: t.error } : {}) },
        );
      }
    };
  }

  /**
   * One line and one counter per guard outcome: the counter and the level from the outcome table. `claims`: false
   * for `guard.apply`, which holds no claim while the handler runs (a failure there left nothing to release).
   */
  outcome(event: GuardedEvent, outcome: GuardOutcome<unknown>, durationMs: number, claims = true): void {
    const info = OUTCOMES[outcome.status];
    if (info.counter !== undefined) this.#inv.metrics.count(info.counter);
    if (outcome.status === "failed") errorToLocalRun(outcome.error);
    if (this.#inv.silent) return;
    const [message, details] = describeOutcome(event.subject, outcome, claims);
    const line = this.#lineBase();
    line.subject = event.subject;
    line.identity = event.identity;
    line.status = outcome.status;
    line.durationMs = Math.round(durationMs);
    if (event.position !== undefined) line.position = event.position;
    this.#inv.logger[info.level](message, Object.assign(line, details));
  }
}

/** The grep-able message of an outcome (see the list at the top) and the fields only that outcome has. */
function describeOutcome(subject: string, outcome: GuardOutcome<unknown>, claims: boolean): [string, Fields] {
  switch (outcome.status) {
    case "processed":
      return [
        `processed ${subject}`,
        {
          fence: outcome.fence,
          attempt: outcome.attempt,
          ...(outcome.writes.length > 0 ? { writes: outcome.writes } : {}),
          ...(outcome.resultOmittedBytes !== undefined
            ? { resultOmittedBytes: outcome.resultOmittedBytes }
            : {}),
        },
      ];
    case "duplicate":
      return [`duplicate skipped for ${subject}`, {}];
    case "conflict":
      return [
        `payload conflict for ${subject}: the identity was committed with another payload; delivery failed`,
        { fingerprint: outcome.fingerprint, committedFingerprint: outcome.committedFingerprint },
      ];
    case "stale": {
      const pos = outcome.position ?? "-";
      const relation =
        pos === outcome.current
          ? `${pos} = ${outcome.current}, another event`
          : `${pos} < ${outcome.current}`;
      return [`stale event skipped for ${subject} (${relation})`, { current: outcome.current }];
    }
    case "busy":
      return [
        `busy: ${subject} is held by an older event (${outcome.holder}); delivery failed for a retry`,
        { holder: outcome.holder },
      ];
    case "in-flight":
      return [`in flight elsewhere: ${subject}; delivery failed for a retry`, {}];
    case "lease-lost":
      return [
        outcome.reason === "superseded"
          ? `lease lost for ${subject}: superseded by a newer event; this run's result was not committed`
          : `lease lost for ${subject}: the lease expired and was taken over; this run's result was not committed`,
        { reason: outcome.reason },
      ];
    case "failed":
      return [
        `handler failed for ${subject}; ${outcome.released ? "claim released" : claims ? "claim not released (it frees at lease expiry)" : "nothing was claimed"}, delivery failed for a retry`,
        { released: outcome.released, error: outcome.error },
      ];
    case "unconfirmed":
      return [
        `state store did not confirm the ${outcome.phase} for ${subject}; delivery failed for a retry`,
        { phase: outcome.phase, error: outcome.error },
      ];
  }
}

/** Input errors are about the bytes, not the code: their stack is noise on a line logged once per receive. */
function briefError(error: unknown): unknown {
  if (!(error instanceof MalformedEventError)) return error;
  return { name: error.name, message: error.message, path: error.path };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
