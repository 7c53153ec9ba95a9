import type { S3EventRecord } from "aws-lambda";
import {
  ACKNOWLEDGED_STATUSES,
  type DeliveryStatus,
  isAcknowledged,
  isDeliveryStatus,
  type OUTCOMES as STATUS_TABLE,
} from "../../core/outcomes.js";
import type { TraceEvent } from "../../sim/live/trace.js";

/** The acknowledged delivery statuses of core/outcomes.ts (the type of ACKNOWLEDGED_STATUSES). */
type AcknowledgedStatus = {
  [S in DeliveryStatus]: (typeof STATUS_TABLE)[S]["acknowledged"] extends true ? S : never;
}[DeliveryStatus];

/**
 * The statuses a handler may report for one event of a successful run, and that end it well: the acknowledged
 * delivery statuses. `empty` carries no event, so it is never an event's outcome.
 */
export type ReportedStatus = Exclude<AcknowledgedStatus, "empty">;
const REPORTED: readonly ReportedStatus[] = ACKNOWLEDGED_STATUSES.filter(
  (s): s is ReportedStatus => s !== "empty",
);
const isReported = (s: string | undefined): s is ReportedStatus => REPORTED.includes(s as ReportedStatus);

/**
 * How one delivery of one event ended (each ends exactly one way), as far as it can be seen from outside the
 * handler: a reported delivery status, or what only the run's watcher can tell.
 */
export type DeliveryOutcome =
  | ReportedStatus
  /** The run succeeded, but the handler reported nothing finer. */
  | "acknowledged"
  | "failed-will-retry"
  /** Failed, and found in the SQS dead-letter queue after the run. */
  | "dead-lettered"
  /** Failed, with no later delivery and not in a dead-letter queue: lost unless another delivery made it. */
  | "failed";

export const RUN_OUTCOMES: readonly DeliveryOutcome[] = [
  ...REPORTED,
  "acknowledged",
  "failed-will-retry",
  "dead-lettered",
  "failed",
];

/** Outcomes that end an event well: it was handled (or rightly skipped) and acknowledged. */
const DONE: ReadonlySet<DeliveryOutcome> = new Set<DeliveryOutcome>([...REPORTED, "acknowledged"]);

/** Whether some delivery of the event ended it well. */
export function gotThrough(e: { outcomes: readonly DeliveryOutcome[] }): boolean {
  return e.outcomes.some((o) => DONE.has(o));
}

export interface EventOutcomes {
  /** Correlation id of the event: S3 request id, SQS message id or EventBridge event id. */
  id: string;
  /** Object key, or the message's label (`file:line`). */
  key: string;
  /** S3 events only. */
  sequencer?: string;
  outcomes: DeliveryOutcome[];
}

export interface Classified {
  /** Per delivered record (a record of an invocation), one outcome. */
  perDelivery: DeliveryOutcome[];
  /** Per event (S3 event or replayed message): the outcomes of all its deliveries. */
  perEvent: Map<string, EventOutcomes>;
  /** Whether the handler reported per-event statuses (processed / duplicate / stale …). */
  detailed: boolean;
}

export interface RunCapture {
  /** The event each run got, by run id. */
  inputs: Map<string, unknown>;
  /** What each successful run returned, by run id. */
  results: Map<string, unknown>;
  /** The report a `src/lambda` wrapper handed over (SQS answers carry none), by run id. */
  reports: Map<string, unknown>;
  /** Errors of the handler: thrown out of it, or swallowed by a wrapper into a failed delivery. */
  errors: unknown[];
}

export interface ClassifyInputs {
  /** S3 runs: the input bucket; its `s3-event` trace records are the events. */
  bucket?: string;
  /** Message runs: the events, by correlation id (SQS message id, EventBridge event id) → label. */
  messages?: ReadonlyMap<string, string>;
  /** SQS message ids found in the dead-letter queue after the run. */
  deadLettered?: ReadonlySet<string>;
  /**
   * A stream source: a batch response fails every record from the first one it lists (Lambda resumes the shard
   * there), and a record in a batch the event source discarded (trace `dead-letter`) is dead-lettered.
   */
  stream?: boolean;
}

/**
 * Gives every delivered record exactly one outcome: from the run's status and, where the handler reports
 * (the `src/lambda` wrappers' `{ deliveries }`, returned for direct invokes and handed over for SQS; or
 * `{ outcomes }`), from its per-event status. A failed record is `failed-will-retry` when a later delivery
 * of it exists, `dead-lettered` when it is in the dead-letter queue, else `failed`. A record the wrapper
 * reported malformed is `malformed` even though SQS gets it back as a failure (its redrive policy's job).
 */
export function classify(
  events: readonly TraceEvent[],
  capture: RunCapture,
  inputs: ClassifyInputs,
): Classified {
  const perEvent = new Map<string, EventOutcomes>();
  if (inputs.messages) {
    for (const [id, key] of inputs.messages) perEvent.set(id, { id, key, outcomes: [] });
  }
  for (const e of events) {
    if (inputs.bucket !== undefined && e.type === "s3-event" && e.record.s3.bucket.name === inputs.bucket) {
      const id = e.record.responseElements["x-amz-request-id"];
      perEvent.set(id, {
        id,
        key: decodeURIComponent(e.record.s3.object.key.replace(/\+/g, " ")),
        sequencer: e.record.s3.object.sequencer,
        outcomes: [],
      });
    }
  }
  const runStatus = new Map<string, string>();
  for (const e of events) if (e.type === "run") runStatus.set(e.runId, e.status);
  const deliveries = events.filter(
    (e): e is Extract<TraceEvent, { type: "delivery" }> => e.type === "delivery",
  );
  let detailed = false;
  const perDelivery: DeliveryOutcome[] = [];
  deliveries.forEach((d, index) => {
    const input = capture.inputs.get(d.runId);
    const result = capture.results.get(d.runId);
    const status = runStatus.get(d.runId);
    const failedIds = inputs.stream ? failedFromFirst(d.records, result) : failedMessageIds(result);
    const reported = reportedStatuses(capture.reports.get(d.runId) ?? result);
    if (reported) detailed = true;
    d.records.forEach((correlationId, i) => {
      let outcome: DeliveryOutcome;
      const said = reported?.[i];
      if (status === "succeeded" && !failedIds.has(correlationId)) {
        outcome = isReported(said) ? said : "acknowledged";
      } else if (status === "succeeded" && said === "malformed") {
        outcome = "malformed";
      } else if (deliveries.slice(index + 1).some((x) => x.records.includes(correlationId))) {
        outcome = "failed-will-retry";
      } else if (inputs.deadLettered?.has(correlationId)) {
        outcome = "dead-lettered";
      } else {
        outcome = "failed";
      }
      perDelivery.push(outcome);
      const ids = inputs.messages ? [correlationId] : requestIdsOf(input, d.source, correlationId);
      for (const id of ids) perEvent.get(id)?.outcomes.push(outcome);
    });
  });
  return { perDelivery, perEvent, detailed };
}

/** A stream batch's failed records: from the first listed on (an unknown identifier fails them all, as in Lambda). */
function failedFromFirst(records: readonly string[], result: unknown): Set<string> {
  const listed = failedMessageIds(result);
  if (listed.size === 0) return listed;
  const indexes = [...listed].map((id) => records.indexOf(id));
  const first = indexes.includes(-1) ? 0 : Math.min(...indexes);
  return new Set(records.slice(first));
}

function failedMessageIds(result: unknown): Set<string> {
  const failures = (result as { batchItemFailures?: unknown } | null)?.batchItemFailures;
  if (!Array.isArray(failures)) return new Set();
  return new Set(failures.map((f) => String((f as { itemIdentifier?: unknown })?.itemIdentifier)));
}

/**
 * Per-record statuses a handler reported: `{ deliveries: [{ events: [{ status }] }] }` (by record index) or
 * `{ outcomes: [{ status }] }`. A delivery says its worst event's status: a failure, else the first
 * non-processed one (duplicate, stale …), else processed.
 */
function reportedStatuses(result: unknown): (string | undefined)[] | undefined {
  const r = result as { deliveries?: unknown; outcomes?: unknown } | null;
  if (Array.isArray(r?.deliveries)) {
    const out: (string | undefined)[] = [];
    for (const d of r.deliveries as (
      | { recordIndex?: number; events?: { status?: string }[] }
      | undefined
    )[]) {
      if (!d) continue;
      const statuses = (d.events ?? []).map((e) => e.status ?? "");
      const worst =
        statuses.find((s) => !isDeliveryStatus(s) || !isAcknowledged(s)) ??
        statuses.find((s) => s !== "processed" && isReported(s)) ??
        statuses[0];
      out[typeof d.recordIndex === "number" ? d.recordIndex : out.length] = worst;
    }
    return out;
  }
  if (Array.isArray(r?.outcomes)) {
    return r.outcomes.map((o) => String((o as { status?: unknown }).status ?? ""));
  }
  return undefined;
}

/**
 * Statuses of events whose handler never ran: the guard skipped them (duplicate, stale, conflict, busy, in-flight)
 * or the adapter did before the guard (malformed, test-event, empty, deferred).
 */
const HANDLER_SKIPPED: ReadonlySet<string> = new Set([
  "duplicate",
  "stale",
  "conflict",
  "busy",
  "in-flight",
  "malformed",
  "test-event",
  "empty",
  "deferred",
]);

/**
 * Whether a run's handler may have run, from the report its wrapper handed over or the `{ outcomes }` it returned:
 * false only when the report lists the run's events and every one was skipped before the handler (a batch of
 * duplicates). Without a report (a plain handler), it ran.
 */
export function handlerMayHaveRun(report: unknown): boolean {
  const r = report as { deliveries?: unknown; outcomes?: unknown } | null | undefined;
  let statuses: unknown[];
  if (Array.isArray(r?.deliveries)) {
    statuses = r.deliveries.flatMap((d: { events?: { status?: unknown }[] } | undefined) =>
      Array.isArray(d?.events) ? d.events.map((e) => e?.status) : [],
    );
  } else if (Array.isArray(r?.outcomes)) {
    statuses = r.outcomes.map((o: { status?: unknown } | undefined) => o?.status);
  } else {
    return true;
  }
  return statuses.some((s) => typeof s !== "string" || !HANDLER_SKIPPED.has(s));
}

/** The S3 request ids a delivered record carries (an SQS body holds a notification with its records). */
function requestIdsOf(input: unknown, source: string, correlationId: string): string[] {
  if (source !== "sqs") return [correlationId];
  const records = (input as { Records?: { messageId?: string; body?: string }[] } | undefined)?.Records ?? [];
  const message = records.find((r) => r.messageId === correlationId);
  try {
    const body = JSON.parse(message?.body ?? "{}") as { Records?: S3EventRecord[] };
    return (body.Records ?? []).map((r) => r.responseElements?.["x-amz-request-id"] ?? "").filter(Boolean);
  } catch {
    return [];
  }
}
