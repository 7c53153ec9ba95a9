import { normalizeSequencer, positionBefore } from "../../core/position.js";
import { type DispatchedExecution, dispatchedExecution } from "../../durable/payload.js";
import type { DurableStart, InvokeRecord } from "../../local/emulators/lambda-server.js";
import type { RunCheck } from "./invariants.js";

/**
 * The checks `eonce run` makes of a durable dispatcher, from what the local Lambda endpoint recorded (every start,
 * in start order, with its payload) and, with `--durable`, from the executions' ends. Named like I1–I4:
 *
 * - D1 once per event: each event started at most one durable execution, and no Invoke was answered
 *   `DurableExecutionAlreadyStartedException` (one name sent with two payloads).
 * - D2 in order: per subject, the executions started in position order, the newest event's last.
 * - D3 ran to the end (with `--durable`): every started execution ended `SUCCEEDED` under LocalDurableTestRunner.
 *
 * An event is told by its payload: the S3 event's own fields (bucket, key, version, sequencer, operation) when the
 * payload carries them, else the `execution` envelope's subject and identity (`dispatchedExecution`). Its subject and
 * position are the envelope's; an S3 event without a position in its envelope (a dispatcher in dedupe-only mode) is
 * ordered by its sequencer. Payloads that name no event (no envelope: a hand-rolled dispatcher) leave D1 and D2 `not
 * checked`, and the run's result unknown; envelopes without any position leave D2 `n/a` (no order to keep).
 */
export type DurableCheck = RunCheck<"D1" | "D2" | "D3">;

/** How one started execution ended under LocalDurableTestRunner (`--durable`). */
export interface ExecutionOutcome {
  /** The start's order (1, 2, …) and name. */
  order: number;
  name: string;
  /** `SUCCEEDED`, `FAILED`, … as the runner reports it; `RUNNING` when it did not end in time. */
  status: string;
  result?: unknown;
  error?: string;
}

export interface DurableCheckInputs {
  starts: readonly DurableStart[];
  invokes: readonly InvokeRecord[];
  /** S3 runs: every event of the input bucket, its subject `bucket/key`, normalized sequencer, and whether it got through. */
  events?: readonly { subject: string; position: string; gotThrough: boolean }[];
  /** With `--durable`: how each execution ended. */
  executions?: readonly ExecutionOutcome[];
}

export const DURABLE_CHECK_TITLES = {
  D1: "one durable execution per event",
  D2: "in order per subject (the newest event's last)",
  D3: "every started execution ran to the end",
} as const;

/** What the checks read of one start's payload. */
export interface StartView {
  start: DurableStart;
  /** The envelope, when the payload has one that checks. */
  execution: DispatchedExecution | undefined;
  /** What tells this event from others (undefined: the payload names no event). */
  event: string | undefined;
  subject: string | undefined;
  /** The order key: the envelope's position, else the S3 event's normalized sequencer. */
  position: string | undefined;
}

/** Reads a start's payload: its envelope and, for S3 events, the event's own fields. */
export function viewStart(start: DurableStart): StartView {
  let payload: unknown;
  try {
    payload = JSON.parse(start.payload);
  } catch {
    payload = undefined;
  }
  let execution: DispatchedExecution | undefined;
  try {
    execution = dispatchedExecution(payload);
  } catch {
    execution = undefined;
  }
  const e = (payload as { event?: Record<string, unknown> } | undefined)?.event;
  const s3 = e?.kind === "s3" && typeof e.bucket === "string" && typeof e.key === "string" ? e : undefined;
  const sequencer = typeof s3?.sequencer === "string" ? orderOf(s3.sequencer) : undefined;
  return {
    start,
    execution,
    event: s3
      ? JSON.stringify([
          "s3",
          s3.bucket,
          s3.key,
          s3.versionId ?? null,
          s3.sequencer ?? null,
          s3.operation ?? null,
        ])
      : execution
        ? JSON.stringify([execution.subject, execution.identity])
        : undefined,
    subject: execution?.subject ?? (s3 ? `${s3.bucket}/${s3.key}` : undefined),
    position: execution?.position ?? sequencer,
  };
}

function orderOf(sequencer: string): string | undefined {
  try {
    return normalizeSequencer(sequencer);
  } catch {
    return undefined;
  }
}

export function checkDurable(inputs: DurableCheckInputs): DurableCheck[] {
  const views = inputs.starts.map(viewStart);
  return [oncePerEvent(views, inputs.invokes), inOrder(views, inputs.events), ranToEnd(inputs)];
}

const check = (id: DurableCheck["id"], status: DurableCheck["status"], detail: string): DurableCheck => ({
  id,
  title: DURABLE_CHECK_TITLES[id],
  status,
  detail,
});

/** Why there is nothing to judge (no start at all), with the refused Invokes when there were any. */
function noStarts(invokes: readonly InvokeRecord[]): string {
  const refused = invokes.filter((i) => i.outcome === "rejected");
  return (
    "no durable execution was started" +
    (refused.length ? ` (${refused.length} Invoke(s) refused: ${refused[0]?.error})` : "")
  );
}

function oncePerEvent(views: readonly StartView[], invokes: readonly InvokeRecord[]): DurableCheck {
  if (views.length === 0) return check("D1", "not checked", noStarts(invokes));
  const unattributed = views.filter((v) => v.event === undefined).length;
  if (unattributed === views.length) {
    const detail = `none of the ${views.length} starts' payloads names its event (no execution envelope, no S3 event)`;
    return check("D1", "not checked", detail);
  }
  const byEvent = new Map<string, StartView[]>();
  for (const v of views)
    if (v.event !== undefined) byEvent.set(v.event, [...(byEvent.get(v.event) ?? []), v]);
  const twice = [...byEvent.values()].filter((starts) => starts.length > 1);
  const conflicts = invokes.filter((i) => i.outcome === "conflict");
  const existing = invokes.filter((i) => i.outcome === "existing").length;
  const problems: string[] = [];
  const first = twice[0];
  if (first) {
    const names = first.map((v) => v.start.name).join(", ");
    problems.push(
      `${twice.length} event(s) started more than one execution (${first[0]?.subject}: ${names})`,
    );
  }
  if (conflicts.length) {
    problems.push(
      `${conflicts.length} Invoke(s) answered DurableExecutionAlreadyStartedException, one name sent with ` +
        `another payload (${conflicts[0]?.name})`,
    );
  }
  const evidence =
    `${views.length} starts for ${byEvent.size} events` +
    (existing ? `; ${existing} repeated Invoke(s) answered with their execution` : "") +
    (unattributed ? `; ${unattributed} start(s) naming no event, not counted` : "");
  return check("D1", problems.length ? "fail" : "pass", [...problems, evidence].join("; "));
}

function inOrder(views: readonly StartView[], events: DurableCheckInputs["events"]): DurableCheck {
  if (views.length === 0) return check("D2", "not checked", "no durable execution was started");
  const bySubject = new Map<string, StartView[]>();
  for (const v of views) {
    if (v.subject !== undefined) bySubject.set(v.subject, [...(bySubject.get(v.subject) ?? []), v]);
  }
  const problems: string[] = [];
  let unordered = 0;
  for (const [subject, starts] of bySubject) {
    if (starts.some((v) => v.position === undefined)) {
      unordered++;
      continue;
    }
    for (let i = 1; i < starts.length; i++) {
      const [before, after] = [starts[i - 1], starts[i]];
      if (!before || !after) continue;
      const [p, q] = [before.position ?? "", after.position ?? ""];
      // The same event again right after itself is D1's: here, an older position, or another event at the same one.
      if (positionBefore(q, p) || (q === p && after.event !== before.event)) {
        problems.push(`${subject}: ${after.start.name} (position ${q}) started after ${p}`);
      }
    }
  }
  const newest = newestChecks(bySubject, events);
  problems.push(...newest.problems);
  if (bySubject.size === 0) {
    const detail = `none of the ${views.length} starts' payloads names its subject (no execution envelope, no S3 event)`;
    return check("D2", "not checked", detail);
  }
  if (bySubject.size === unordered) {
    // Envelopes without a position: a dispatcher in dedupe-only mode, whose events have no order to keep.
    const dedupeOnly = views.every((v) => v.execution !== undefined && v.execution.position === null);
    const detail = dedupeOnly
      ? `no start carries a position (${unordered} subject(s)): the dispatcher deduplicates only, no order to keep`
      : `no start carries a position (${unordered} subject(s)): the order cannot be told`;
    const status = problems.length ? "fail" : dedupeOnly ? "n/a" : "not checked";
    return check("D2", status, [...problems, detail].join("; "));
  }
  const notes = [
    ...(unordered ? [`${unordered} subject(s) without positions not checked`] : []),
    ...newest.notes,
  ];
  const evidence = `${bySubject.size - unordered} subject(s), each started in position order, the newest last`;
  return check(
    "D2",
    problems.length ? "fail" : "pass",
    [
      ...(problems.length ? [`${problems.length} violation(s), first: ${problems[0]}`] : [evidence]),
      ...notes,
    ].join("; "),
  );
}

/**
 * S3 runs: each subject's newest event (by sequencer) must have started its subject's last execution. A subject whose
 * newest event never got through is left to I4; subjects the dispatcher names otherwise (a custom subject) are skipped.
 */
function newestChecks(
  bySubject: ReadonlyMap<string, readonly StartView[]>,
  events: DurableCheckInputs["events"],
): { problems: string[]; notes: string[] } {
  const problems: string[] = [];
  const notes: string[] = [];
  if (!events?.length) return { problems, notes };
  const newest = new Map<string, { position: string; gotThrough: boolean }>();
  for (const e of events) {
    const was = newest.get(e.subject);
    if (!was || positionBefore(was.position, e.position)) newest.set(e.subject, e);
  }
  if (![...bySubject.keys()].some((s) => newest.has(s))) {
    notes.push("the starts' subjects are not the uploads' bucket/key: their newest events not matched");
    return { problems, notes };
  }
  let lost = 0;
  for (const [subject, want] of newest) {
    if (!want.gotThrough) {
      lost++;
      continue;
    }
    const last = bySubject.get(subject)?.at(-1);
    if (!last) problems.push(`${subject}: its newest event started no execution`);
    else if (last.position !== want.position)
      problems.push(
        `${subject}: the last start is at ${last.position}, its newest event at ${want.position}`,
      );
  }
  if (lost) notes.push(`${lost} subject(s) whose newest event never got through, left to I4`);
  return { problems, notes };
}

function ranToEnd({ executions, starts }: DurableCheckInputs): DurableCheck {
  if (!executions) {
    return check("D3", "not checked", "pass --durable <module:export> to run each started execution");
  }
  if (starts.length === 0) return check("D3", "not checked", "no durable execution was started");
  const ran = new Set(executions.map((e) => e.order));
  const never = starts.filter((s) => !ran.has(s.order));
  if (never.length) {
    return check(
      "D3",
      "fail",
      `${never.length}/${starts.length} started execution(s) never ran (${never[0]?.name})`,
    );
  }
  const bad = executions.filter((e) => e.status !== "SUCCEEDED");
  const first = bad[0];
  if (first) {
    const why = `${first.name}: ${first.status}${first.error ? `, ${first.error}` : ""}`;
    return check("D3", "fail", `${bad.length}/${executions.length} execution(s) did not succeed (${why})`);
  }
  return check(
    "D3",
    "pass",
    `${executions.length}/${starts.length} executions SUCCEEDED under LocalDurableTestRunner`,
  );
}
