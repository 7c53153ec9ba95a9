import type { GuardStep, TraceEvent } from "../../sim/live/trace.js";
import type { TimelineEntry, TimelineOutcome } from "./scenario.js";

export interface TimelineQuery {
  /** S3 request ids (or message ids) of the key's events → the lane they belong to (`cat`, `dog`). */
  lanes: Map<string, string>;
  /** The guard's state key of the subject (`o#bucket/key`); absent for naive runs. */
  stateKey?: string;
  /** Times are relative to this (e.g. the key's first upload). */
  originMs: number;
}

/**
 * One entry per delivery of the key's events, with how it ended: from the guard's steps of that run
 * (as the state store saw them) when the guard is on, else from the run's status.
 */
export function buildTimeline(events: readonly TraceEvent[], q: TimelineQuery): TimelineEntry[] {
  const runs = new Map<string, Extract<TraceEvent, { type: "run" }>>();
  const zombieEnds = new Map<string, number>();
  const steps = new Map<string, { step: GuardStep; atMs: number; fence?: number }[]>();
  const supersedes: { atMs: number; fence: number }[] = [];
  for (const e of events) {
    if (e.type === "run") runs.set(e.runId, e);
    if (e.type === "zombie-end") zombieEnds.set(e.runId, e.atMs);
    if (e.type === "guard" && e.key === q.stateKey) {
      const list = steps.get(e.runId) ?? [];
      list.push({ step: e.step, atMs: e.atMs, ...(e.fence !== undefined ? { fence: e.fence } : {}) });
      steps.set(e.runId, list);
      if (e.step === "superseded" && e.fence !== undefined) supersedes.push({ atMs: e.atMs, fence: e.fence });
    }
  }
  const out: TimelineEntry[] = [];
  for (const e of events) {
    if (e.type !== "delivery") continue;
    const lane = e.records.map((r) => q.lanes.get(r)).find((l) => l !== undefined);
    if (lane === undefined) continue;
    const run = runs.get(e.runId);
    const endAtMs = zombieEnds.get(e.runId) ?? run?.atMs ?? e.atMs;
    out.push({
      atMs: Math.max(0, e.atMs - q.originMs),
      endMs: Math.max(0, endAtMs - q.originMs),
      lane,
      outcome: outcomeOf(
        runs.get(e.runId)?.status,
        steps.get(e.runId) ?? [],
        supersedes,
        q.stateKey !== undefined,
      ),
      duplicate: e.duplicate,
      attempt: e.attempt,
    });
  }
  return out;
}

function outcomeOf(
  status: string | undefined,
  steps: { step: GuardStep; atMs: number; fence?: number }[],
  supersedes: { atMs: number; fence: number }[],
  guarded: boolean,
): TimelineOutcome {
  if (status === "crashed") return "crashed";
  const has = (s: GuardStep) => steps.some((x) => x.step === s);
  if (has("committed")) return has("took-over") ? "took-over" : "processed";
  if (has("lease-lost")) {
    const mine = steps.find((x) => x.fence !== undefined)?.fence ?? 0;
    return supersedes.some((s) => s.fence > mine) ? "superseded" : "lease-lost";
  }
  for (const s of ["duplicate", "stale", "in-flight", "busy"] as const) if (has(s)) return s;
  if (status === "timed-out") return "timed-out";
  if (status === "failed" || (guarded && steps.length > 0)) return "failed";
  return status === "succeeded" ? "processed" : "failed";
}
