import type { S3EventRecord } from "aws-lambda";
import type { TraceEvent } from "../trace.js";

/** How one delivery of one event ended (each ends exactly one way), as far as it can be seen from outside the handler. */
export type DeliveryOutcome =
  | "processed"
  | "duplicate"
  | "stale"
  | "lease-lost"
  | "malformed"
  | "test-event"
  /** The run succeeded, but the handler reported nothing finer. */
  | "acknowledged"
  | "failed-will-retry"
  | "dead-lettered";

export interface EventOutcomes {
  /** S3 request id of the event. */
  requestId: string;
  key: string;
  sequencer: string;
  outcomes: DeliveryOutcome[];
}

export interface Classified {
  /** Per delivered record (a record of an invocation), one outcome. */
  perDelivery: DeliveryOutcome[];
  /** Per S3 event: the outcomes of all its deliveries. */
  perEvent: Map<string, EventOutcomes>;
  /** Whether the handler reported per-event statuses (processed / duplicate / stale …). */
  detailed: boolean;
}

export interface RunCapture {
  /** The event each run got, by run id. */
  inputs: Map<string, unknown>;
  /** What each successful run returned, by run id. */
  results: Map<string, unknown>;
}

const REPORTED: ReadonlySet<string> = new Set([
  "processed",
  "duplicate",
  "stale",
  "lease-lost",
  "malformed",
  "test-event",
]);

/**
 * Gives every delivered record exactly one outcome: from the run's status and, where the handler returns
 * a report (the `src/lambda` wrappers' `{ deliveries }`, or `{ outcomes }`), from its per-event status.
 * A failed record is `failed-will-retry` when a later delivery of it exists, else `dead-lettered`.
 */
export function classify(events: readonly TraceEvent[], capture: RunCapture, bucket: string): Classified {
  const s3Events = new Map<string, EventOutcomes>();
  for (const e of events) {
    if (e.type === "s3-event" && e.record.s3.bucket.name === bucket) {
      const id = e.record.responseElements["x-amz-request-id"];
      s3Events.set(id, {
        requestId: id,
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
    const failedIds = failedMessageIds(result);
    const reported = reportedStatuses(result);
    if (reported) detailed = true;
    d.records.forEach((correlationId, i) => {
      let outcome: DeliveryOutcome;
      const later = deliveries.slice(index + 1).some((x) => x.records.includes(correlationId));
      if (status !== "succeeded" || failedIds.has(correlationId)) {
        outcome = later ? "failed-will-retry" : "dead-lettered";
      } else {
        outcome = (reported?.[i] as DeliveryOutcome | undefined) ?? "acknowledged";
      }
      perDelivery.push(outcome);
      for (const requestId of requestIdsOf(input, d.source, correlationId)) {
        s3Events.get(requestId)?.outcomes.push(outcome);
      }
    });
  });
  return { perDelivery, perEvent: s3Events, detailed };
}

function failedMessageIds(result: unknown): Set<string> {
  const failures = (result as { batchItemFailures?: unknown } | null)?.batchItemFailures;
  if (!Array.isArray(failures)) return new Set();
  return new Set(failures.map((f) => String((f as { itemIdentifier?: unknown })?.itemIdentifier)));
}

/** Per-record statuses a handler reported: `{ deliveries: [{ events: [{ status }] }] }` or `{ outcomes: [{ status }] }`. */
function reportedStatuses(result: unknown): string[] | undefined {
  const r = result as { deliveries?: unknown; outcomes?: unknown } | null;
  if (Array.isArray(r?.deliveries)) {
    return r.deliveries.map((d) => {
      const statuses = ((d as { events?: { status?: string }[] }).events ?? []).map((e) => e.status ?? "");
      // A delivery is as good as its worst event; all reported ones are acknowledged kinds here.
      return statuses.find((s) => s !== "processed" && REPORTED.has(s)) ?? statuses[0] ?? "acknowledged";
    });
  }
  if (Array.isArray(r?.outcomes)) {
    return r.outcomes.map((o) => {
      const s = String((o as { status?: unknown }).status ?? "");
      return REPORTED.has(s) ? s : "acknowledged";
    });
  }
  return undefined;
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
