import type { TraceEvent } from "../../sim/live/trace.js";
import { decodeS3NotificationKey } from "../../sources/key-encoding.js";
import { type DurableReport, formatDurable } from "./durable-report.js";
import { type ErrorSummary, summarizeErrors } from "./errors.js";
import type { InvariantCheck, RunCheck } from "./invariants.js";
import type { RunSource } from "./options.js";
import {
  type Classified,
  type DeliveryOutcome,
  gotThrough,
  handlerMayHaveRun,
  RUN_OUTCOMES,
} from "./outcomes.js";

export interface RunReport {
  handler: string;
  source: RunSource;
  seed: number;
  /** Objects uploaded (S3 runs; 0 for message runs). */
  uploads: number;
  /**
   * S3 runs: every change of the input bucket S3 notified, in notification order, with its sequencer (the order
   * the guard keeps per key): what to count an effect table against.
   */
  uploaded: UploadedObject[];
  /** Messages sent (message runs; 0 for S3 runs). */
  messages: number;
  /** Distinct events: S3 events, or messages (FIFO deduplication can merge two). */
  events: number;
  deliveries: number;
  handlerRuns: number;
  runs: Record<string, number>;
  outcomes: Record<DeliveryOutcome, number>;
  /** Events no delivery of which succeeded: dead-lettered (found in the DLQ) or lost. */
  unsuccessful: { total: number; deadLettered: number; lost: number };
  /** The handler's errors, grouped: the most frequent first. */
  errors: ErrorSummary[];
  warnings: string[];
  invariants: InvariantCheck[];
  /**
   * When the handler invoked the local Lambda endpoint (a durable dispatcher) or `--durable` was given: the starts,
   * the executions' ends and the checks D1–D3 (durable-checks.ts).
   */
  durable?: DurableReport;
  /** `ok`, `unknown` (a check not made, none failed) or `fail` (see runResult). */
  result: RunVerdict;
  /** `result` is `ok`: every check that applies ran and passed, and every event got through. */
  ok: boolean;
  durationMs: number;
}

/** One S3 event of the input bucket: the key as stored, the event's name, its sequencer and ETag. */
export interface UploadedObject {
  key: string;
  eventName: string;
  sequencer: string;
  etag?: string;
}

/** What a finished run found: the trace, the classified deliveries, the checks and the handler's errors. */
export interface RunFindings extends Pick<RunReport, "handler" | "source" | "seed" | "uploads" | "messages"> {
  /** S3 runs: the input bucket, whose notified events `uploaded` lists. */
  bucket?: string | undefined;
  events: readonly TraceEvent[];
  classified: Classified;
  invariants: InvariantCheck[];
  errors: unknown[];
  /** What each run's wrapper reported (or the run returned), by run id: to tell runs whose handler never ran. */
  reports: ReadonlyMap<string, unknown>;
  startedMs: number;
}

export function buildRunReport(f: RunFindings): RunReport {
  const { deliveries, handlerRuns, runs, missedFaultPoint } = countRuns(f.events, f.reports);
  const outcomes = Object.fromEntries(RUN_OUTCOMES.map((k) => [k, 0])) as Record<DeliveryOutcome, number>;
  for (const outcome of f.classified.perDelivery) outcomes[outcome]++;
  const unfinished = [...f.classified.perEvent.values()].filter((e) => !gotThrough(e));
  const dead = unfinished.filter((e) => e.outcomes.includes("dead-lettered")).length;
  const unsuccessful = { total: unfinished.length, deadLettered: dead, lost: unfinished.length - dead };
  return {
    handler: f.handler,
    source: f.source,
    seed: f.seed,
    uploads: f.uploads,
    uploaded: uploadedObjects(f.events, f.bucket),
    messages: f.messages,
    events: f.classified.perEvent.size,
    deliveries,
    handlerRuns,
    runs,
    outcomes,
    unsuccessful,
    errors: summarizeErrors(f.errors),
    warnings: warnings(f.errors, f.source, missedFaultPoint),
    invariants: f.invariants,
    ...verdict(f.invariants, unsuccessful.total),
    durationMs: Date.now() - f.startedMs,
  };
}

/**
 * A run's result: `fail` when a check failed or an event never got through; else `unknown` when a check that applies
 * was not made (`not checked`: a flag missing, nothing to judge), since a check not made would pass whatever the
 * handler does; else `ok`. A check that does not apply to the run (`n/a`) leaves it ok.
 */
export type RunVerdict = "ok" | "unknown" | "fail";

/** The result and `ok` of a run with these checks (invariants and durable checks) and events never through. */
export function verdict(
  checks: readonly RunCheck[],
  unsuccessful: number,
): { result: RunVerdict; ok: boolean } {
  const result: RunVerdict =
    unsuccessful > 0 || checks.some((c) => c.status === "fail")
      ? "fail"
      : checks.some((c) => c.status === "not checked")
        ? "unknown"
        : "ok";
  return { result, ok: result === "ok" };
}

/**
 * `eonce run`'s exit code: 0 ok, 1 fail; an unknown result 3 under `--strict`, else 0 (its report says `unknown`).
 * Usage and start-up errors exit 2 before any report.
 */
export function runExitCode(report: Pick<RunReport, "result">, strict: boolean): number {
  if (report.result === "ok") return 0;
  if (report.result === "fail") return 1;
  return strict ? 3 : 0;
}

/** `--strict` when neither `--strict` nor `--no-strict` is given: on when the `CI` variable is set (not `false`/`0`). */
export function strictByDefault(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = env.CI?.trim().toLowerCase();
  return ci !== undefined && ci !== "" && ci !== "false" && ci !== "0";
}

/** The input bucket's S3 events, as notified (keys decoded: the notification form-URL-encodes them). */
function uploadedObjects(events: readonly TraceEvent[], bucket: string | undefined): UploadedObject[] {
  if (bucket === undefined) return [];
  const out: UploadedObject[] = [];
  for (const e of events) {
    if (e.type !== "s3-event" || e.record.s3.bucket.name !== bucket) continue;
    const o = e.record.s3.object;
    out.push({
      key: decodeS3NotificationKey(o.key, "s3.object.key"),
      eventName: e.record.eventName,
      sequencer: o.sequencer,
      ...(o.eTag ? { etag: o.eTag } : {}),
    });
  }
  return out;
}

/**
 * Records handed over, runs by status, and runs whose slowness or crash struck after the handler returned without
 * reaching a fault point: only those whose handler ran, since one that skipped every event (a batch of duplicates)
 * had no effect to put the fault point before.
 */
function countRuns(events: readonly TraceEvent[], reports: ReadonlyMap<string, unknown>) {
  const runs: Record<string, number> = {};
  let deliveries = 0;
  let handlerRuns = 0;
  let missedFaultPoint = 0;
  for (const e of events) {
    if (e.type === "run") {
      handlerRuns++;
      runs[e.status] = (runs[e.status] ?? 0) + 1;
      if (e.faultPointMissed && handlerMayHaveRun(reports.get(e.runId))) missedFaultPoint++;
    }
    if (e.type === "delivery") deliveries += e.records.length;
  }
  return { deliveries, handlerRuns, runs, missedFaultPoint };
}

function warnings(errors: unknown[], source: RunSource, missedFaultPoint: number): string[] {
  const out: string[] = [];
  // A wrapper for another trigger refuses every invocation: say so before anything else.
  const mismatch = errors.find(
    (e) =>
      e instanceof Error && /got (an SQS batch|a direct S3\/EventBridge invocation); use /.test(e.message),
  );
  if (mismatch instanceof Error) {
    out.push(`the handler's wrapper does not fit --source ${source}: ${mismatch.message}`);
  }
  if (missedFaultPoint > 0) {
    out.push(
      `${missedFaultPoint} run(s) drew slowness or a crash but their handler reached no faultPoint(): it struck after ` +
        'the handler returned instead. Call faultPoint() (import { faultPoint } from "effectively-once/local") before the effect',
    );
  }
  return out;
}

/** Formats a run report for the terminal. */
export function formatRunReport(r: RunReport): string {
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ") || "none";
  const inputs =
    r.messages > 0
      ? `messages       ${r.messages} (${r.events} events)`
      : `uploads        ${r.uploads} (${r.events} S3 events)`;
  const lines = [
    `eonce run ${r.handler} — source ${r.source}, seed ${r.seed}, ${(r.durationMs / 1000).toFixed(1)} s`,
    inputs,
    `deliveries     ${r.deliveries}`,
    `handler runs   ${r.handlerRuns}: ${list(r.runs)}`,
    `outcomes       ${list(r.outcomes)}`,
  ];
  r.errors.forEach((e, i) => {
    lines.push(`${(i === 0 ? "errors" : "").padEnd(15)}${e.count}× ${e.error}${e.at ? ` (at ${e.at})` : ""}`);
  });
  for (const w of r.warnings) lines.push(`warning        ${w}`);
  lines.push(...formatDurable(r.durable));
  const checks = [...r.invariants, ...(r.durable?.checks ?? [])];
  lines.push("invariants");
  lines.push(...checks.map((c) => `  ${c.id} ${c.title.padEnd(48)} ${c.status.padEnd(11)} ${c.detail}`));
  const failed = checks.filter((c) => c.status === "fail").map((c) => c.id);
  const u = r.unsuccessful;
  const why = [
    ...(u.total > 0
      ? [
          `${u.total}/${r.events} events never succeeded` +
            ` (${[u.deadLettered ? `${u.deadLettered} dead-lettered` : "", u.lost ? `${u.lost} lost` : ""].filter(Boolean).join(", ")})`,
        ]
      : []),
    ...(failed.length ? [`${failed.join(", ")} failed`] : []),
  ];
  const first = r.errors[0];
  const notChecked = checks.filter((c) => c.status === "not checked").map((c) => c.id);
  lines.push(
    r.result === "ok"
      ? "result         ok"
      : r.result === "unknown"
        ? `result         unknown: ${notChecked.join(", ")} not checked, so not ok (exit 3 under --strict)`
        : `result         FAIL: ${why.join("; ")}${first ? `; first error: ${first.error}${first.at ? ` (at ${first.at})` : ""}` : ""}`,
  );
  return lines.join("\n");
}
