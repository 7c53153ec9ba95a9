/**
 * Every way a delivery (or one event in it) can end: the one vocabulary the guard, the Lambda adapters, the logs,
 * the metrics, the CDK alarms and queries, the local runtime, the demo and the benchmark read. No imports: a CDK app
 * loads this file without loading the runtime.
 *
 * A status is acknowledged only when a commit for its event landed (ours, or another holder's that will land) or
 * the event can never run (duplicate, stale, bad input, a test event); "we cannot know" is never acknowledged, so the
 * source redelivers it. `malformed` is acknowledged from the guard's point of view (retrying cannot help); an SQS
 * adapter still reports it failed so the queue's redrive policy dead-letters it.
 */
export const OUTCOMES = {
  processed: {
    from: "guard",
    acknowledged: true,
    counter: "processed",
    level: "info",
    meaning: "The handler ran and its commit landed.",
  },
  duplicate: {
    from: "guard",
    acknowledged: true,
    counter: "duplicate",
    level: "info",
    meaning: "The same event was committed before; its stored result is replayed.",
  },
  stale: {
    from: "guard",
    acknowledged: true,
    counter: "stale",
    level: "info",
    meaning: "A newer event of the subject was committed or is running; nothing was done.",
  },
  conflict: {
    from: "guard",
    acknowledged: false,
    counter: "conflict",
    level: "error",
    meaning:
      "The same identity was committed with another payload fingerprint: the key was reused for other content. " +
      "Nothing ran; it is retried, then dead-lettered, for someone to look at.",
  },
  "lease-lost": {
    from: "guard",
    acknowledged: true,
    counter: "leaseLost",
    level: "warn",
    meaning:
      "The handler ran, but a claim with a newer fence holds the subject: that holder commits or retries.",
  },
  busy: {
    from: "guard",
    acknowledged: false,
    counter: "busy",
    level: "warn",
    meaning:
      "An older event of the subject holds a live lease (busy policy `retry`, or waiting ran out of time).",
  },
  "in-flight": {
    from: "guard",
    acknowledged: false,
    counter: "inFlight",
    level: "warn",
    meaning: "The same event runs elsewhere (in-flight policy `retry`, or waiting ran out of time).",
  },
  failed: {
    from: "guard",
    acknowledged: false,
    counter: "failed",
    level: "error",
    meaning:
      "The handler threw (or its result could not be committed); the claim was released where possible.",
  },
  unconfirmed: {
    from: "guard",
    acknowledged: false,
    counter: "unconfirmed",
    level: "error",
    meaning:
      "The store could not confirm a claim, lease or commit (an outage, or lost responses past every retry).",
  },
  malformed: {
    from: "delivery",
    acknowledged: true,
    counter: "malformed",
    level: "error",
    meaning:
      "Input that is no event (a typed MalformedEventError): dead-lettered via the queue, or acknowledged.",
  },
  "test-event": {
    from: "delivery",
    acknowledged: true,
    counter: "testEvent",
    level: "info",
    meaning: "`s3:TestEvent`, sent when a notification is configured: acknowledged.",
  },
  empty: {
    from: "delivery",
    acknowledged: true,
    counter: undefined,
    level: "warn",
    meaning: "A delivery that carries no event (an S3 notification with no records): acknowledged.",
  },
  deferred: {
    from: "delivery",
    acknowledged: false,
    counter: "deferred",
    level: "warn",
    meaning:
      "Not processed in this invocation: an earlier record of its FIFO group failed, or no time was left.",
  },
} as const satisfies Record<string, OutcomeInfo>;

/** What one status means: where it comes from, whether it is acknowledged, its counter and log level. */
export interface OutcomeInfo {
  /** `guard`: a GuardOutcome status; `delivery`: decided by the adapter before the guard runs. */
  readonly from: "guard" | "delivery";
  readonly acknowledged: boolean;
  /** The CloudWatch counter (camelCase, as metric names are); none for a status not worth a metric. */
  readonly counter: string | undefined;
  readonly level: "info" | "warn" | "error";
  readonly meaning: string;
}

/** Every status, guard and delivery alike. */
export type DeliveryStatus = keyof typeof OUTCOMES;
/** The statuses a guard run or apply can end with. */
export type GuardOutcomeStatus = {
  [S in DeliveryStatus]: (typeof OUTCOMES)[S]["from"] extends "guard" ? S : never;
}[DeliveryStatus];

/** Every status a delivery can end with. */
export const DELIVERY_STATUSES = Object.keys(OUTCOMES) as DeliveryStatus[];
/** The statuses the guard itself returns (the rest are decided by the adapters before it runs). */
export const GUARD_OUTCOME_STATUSES = DELIVERY_STATUSES.filter(
  (s) => OUTCOMES[s].from === "guard",
) as GuardOutcomeStatus[];
/** Statuses that are acknowledged: the source does not redeliver. */
export const ACKNOWLEDGED_STATUSES = DELIVERY_STATUSES.filter((s) => OUTCOMES[s].acknowledged);
/** Statuses that are failed for a redelivery. */
export const RETRIED_STATUSES = DELIVERY_STATUSES.filter((s) => !OUTCOMES[s].acknowledged);

export type OutcomeCounter = NonNullable<(typeof OUTCOMES)[DeliveryStatus]["counter"]>;

/** Whether `value` is a known status. */
export function isDeliveryStatus(value: unknown): value is DeliveryStatus {
  return typeof value === "string" && Object.hasOwn(OUTCOMES, value);
}

/** Whether the source may forget a delivery that ended with `status` (no redelivery). */
export function isAcknowledged(status: DeliveryStatus): boolean {
  return OUTCOMES[status].acknowledged;
}

/** The counter names of a set of statuses (for alarms and dashboards). */
export function countersOf(statuses: readonly DeliveryStatus[]): OutcomeCounter[] {
  return statuses.flatMap((s) => {
    const counter = OUTCOMES[s].counter;
    return counter === undefined ? [] : [counter];
  });
}
