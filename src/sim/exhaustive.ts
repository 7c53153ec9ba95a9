import { memoryBackend } from "../engines/memory/sim-backend.js";
import { DfsChooser } from "./chooser.js";
import { SIM_GUARD } from "./config.js";
import { type FaultConfig, NO_HISTORY_FAULTS, type StoreFaultKind } from "./faults.js";
import { type HistoryDeps, runHistory, type StoreWrapper } from "./history.js";
import type { HistoryConfig, Mode } from "./history-config.js";
import type { KnownIssue } from "./known-issues.js";
import type { Violation } from "./observer.js";

/** A small case whose every interleaving (each store call a scheduling point) and fault placement is explored. */
export interface ExhaustiveCase {
  name: string;
  config: HistoryConfig;
}

interface SmallCase {
  workers: number;
  /** The mode of each event: the ordered events (one subject, positions 1..n), then the dedupe-only ones. */
  modes: Mode[];
  dedupe?: number;
  /** Up to `max` store faults of these kinds, and pauses too when `pause`. */
  faults: { max: number; kinds: StoreFaultKind[]; pause?: boolean };
  extraCopies?: number;
  busy?: HistoryConfig["guard"]["busy"];
  /** Handler work (virtual ms): above heartbeatMs (the default, 350), a renewal joins the interleavings. */
  workMs?: number;
  /** Timer firings a store call may wait through (slow requests as a choice). Default 1. */
  postpone?: number;
}

function small(name: string, o: SmallCase): ExhaustiveCase {
  const faults: FaultConfig = {
    ...NO_HISTORY_FAULTS,
    storeKinds: o.faults.kinds,
    max: o.faults.max,
    pauseRate: o.faults.pause ? 1 : 0,
  };
  const workMs = o.workMs ?? 350;
  return {
    name,
    config: {
      workers: o.workers,
      subjects: 1,
      eventsPerSubject: o.modes.length - (o.dedupe ?? 0),
      dedupeEvents: o.dedupe ?? 0,
      guard: { ...SIM_GUARD, busy: o.busy ?? "wait" },
      offsets: Array.from({ length: o.workers }, () => 0),
      faults,
      modes: o.modes,
      applyShare: 0,
      directShare: 0,
      minWorkMs: workMs,
      maxWorkMs: workMs,
      source: { visibilityMs: 3000, retryDelayMs: [50, 50], maxReceives: 30, reorder: false },
      extraCopies: o.extraCopies ?? 0,
      maxPostpone: o.postpone ?? 1,
      maxSteps: 5_000,
      maxVirtualMs: 300_000,
    },
  };
}

/** The cases the default suite and `--exhaustive` explore in full. */
export const EXHAUSTIVE_CASES: ExhaustiveCase[] = [
  small("2 workers x 2 events, run, up to 2 faults (lost response, failure before)", {
    workers: 2,
    modes: ["run-atomic", "run-direct"],
    faults: { max: 2, kinds: ["lose-response", "fail-before"] },
  }),
  small("2 workers x 2 events, run, up to 2 outages or pauses", {
    workers: 2,
    modes: ["run-atomic", "run-direct"],
    faults: { max: 2, kinds: ["hang"], pause: true },
  }),
  small("2 workers x 2 events, run+apply, supersede, up to 2 faults or pauses", {
    workers: 2,
    modes: ["run-direct", "apply"],
    faults: { max: 2, kinds: ["lose-response", "hang"], pause: true },
    busy: "supersede",
  }),
  small("2 workers x 3 events (one dedupe-only, one duplicated), up to 2 faults", {
    workers: 2,
    modes: ["run-atomic", "apply", "run-atomic"],
    dedupe: 1,
    faults: { max: 2, kinds: ["lose-response", "fail-before"] },
    extraCopies: 1,
    workMs: 0,
  }),
  small("2 workers x 3 events, one subject, up to 1 fault or pause", {
    workers: 2,
    modes: ["run-direct", "run-atomic", "apply"],
    faults: { max: 1, kinds: ["lose-response", "delay"], pause: true },
  }),
  small("3 workers x 2 events (one duplicated), up to 1 fault or pause", {
    workers: 3,
    modes: ["run-direct", "run-atomic"],
    faults: { max: 1, kinds: ["lose-response"], pause: true },
    extraCopies: 1,
  }),
];

export interface ExploreResult {
  name: string;
  /** Distinct histories explored (leaves of the choice tree). */
  states: number;
  /** The tree was explored in full (not cut at `maxStates`). */
  complete: boolean;
  /** Histories with violations. */
  violations: number;
  /** Of those, histories showing no known issue's pattern (KNOWN_ISSUES in known-issues.ts). */
  unexplained: number;
  /** The first failures (unexplained ones first), with their choice paths for `replayPath`. */
  failures: { path: number[]; violations: Violation[]; knownIssues: KnownIssue[] }[];
}

/** DFS over every choice of the case, replaying from the start along each prefix. */
export async function explore(
  c: ExhaustiveCase,
  o: { maxStates?: number; wrapStore?: StoreWrapper } = {},
): Promise<ExploreResult> {
  const result: ExploreResult = {
    name: c.name,
    states: 0,
    complete: false,
    violations: 0,
    unexplained: 0,
    failures: [],
  };
  let prefix: number[] | undefined = [];
  while (prefix) {
    if (o.maxStates !== undefined && result.states >= o.maxStates) return result;
    const chooser: DfsChooser = new DfsChooser(prefix);
    const r = await enumerated(c, chooser, o.wrapStore ? { wrapStore: o.wrapStore } : {});
    result.states++;
    if (r.violations.length > 0) {
      result.violations++;
      if (r.knownIssues.length === 0) result.unexplained++;
      if (r.knownIssues.length === 0 || result.failures.length < 10)
        result.failures.push({
          path: chooser.made.map((m) => m.c),
          violations: r.violations,
          knownIssues: r.knownIssues,
        });
    }
    prefix = chooser.next();
  }
  result.complete = true;
  return result;
}

/** Replays one path of a case with its trace. */
export async function replayPath(c: ExhaustiveCase, path: number[]) {
  return enumerated(c, new DfsChooser(path), { trace: true });
}

/** One history of a case on the memory store, faults and pauses branched on rather than drawn. */
function enumerated(c: ExhaustiveCase, chooser: DfsChooser, o: Pick<HistoryDeps, "wrapStore" | "trace">) {
  return runHistory(c.config, {
    chooser,
    backend: (onSinkLanded) => memoryBackend({ onSinkLanded }),
    ...o,
    sampleEvery: "step",
    enumerate: true,
  });
}
