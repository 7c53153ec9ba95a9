import { memoryBackend } from "./backend.js";
import { DfsChooser } from "./chooser.js";
import { SIM_GUARD } from "./config.js";
import { type FaultConfig, NO_FAULTS, type StoreFaultKind } from "./faults.js";
import { type HistoryConfig, type Mode, runHistory, type StoreWrapper } from "./history.js";
import type { Violation } from "./observer.js";

/** A small case whose every interleaving (each store call a scheduling point) and fault placement is explored. */
export interface ExhaustiveCase {
  name: string;
  config: HistoryConfig;
}

function small(
  name: string,
  o: {
    workers: number;
    events: number;
    dedupe?: number;
    modes: Mode[];
    maxFaults: number;
    kinds: StoreFaultKind[];
    pause?: boolean;
    extraCopies?: number;
    busy?: HistoryConfig["guard"]["busy"];
    /** Handler work (virtual ms): above heartbeatMs, a renewal joins the interleavings. */
    workMs?: number;
    /** Timer firings a store call may wait through (slow requests as a choice). Default 1. */
    postpone?: number;
  },
): ExhaustiveCase {
  const faults: FaultConfig = {
    ...NO_FAULTS,
    storeKinds: o.kinds,
    max: o.maxFaults,
    pauseRate: o.pause ? 1 : 0,
  };
  return {
    name,
    config: {
      workers: o.workers,
      subjects: 1,
      eventsPerSubject: o.events,
      dedupeEvents: o.dedupe ?? 0,
      guard: { ...SIM_GUARD, busy: o.busy ?? "wait" },
      offsets: Array.from({ length: o.workers }, () => 0),
      faults,
      modes: o.modes,
      applyShare: 0,
      directShare: 0,
      minWorkMs: o.workMs ?? 0,
      maxWorkMs: o.workMs ?? 0,
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
    events: 2,
    modes: ["run-atomic", "run-direct"],
    maxFaults: 2,
    kinds: ["lose-response", "fail-before"],
    workMs: 350,
  }),
  small("2 workers x 2 events, run, up to 2 outages or pauses", {
    workers: 2,
    events: 2,
    modes: ["run-atomic", "run-direct"],
    maxFaults: 2,
    kinds: ["hang"],
    pause: true,
    workMs: 350,
  }),
  small("2 workers x 2 events, run+apply, supersede, up to 2 faults or pauses", {
    workers: 2,
    events: 2,
    modes: ["run-direct", "apply"],
    maxFaults: 2,
    kinds: ["lose-response", "hang"],
    pause: true,
    busy: "supersede",
    workMs: 350,
  }),
  small("2 workers x 3 events (one dedupe-only, one duplicated), up to 2 faults", {
    workers: 2,
    events: 2,
    dedupe: 1,
    modes: ["run-atomic", "apply", "run-atomic"],
    maxFaults: 2,
    kinds: ["lose-response", "fail-before"],
    extraCopies: 1,
  }),
  small("2 workers x 3 events, one subject, up to 1 fault or pause", {
    workers: 2,
    events: 3,
    modes: ["run-direct", "run-atomic", "apply"],
    maxFaults: 1,
    kinds: ["lose-response", "delay"],
    pause: true,
    workMs: 350,
  }),
  small("3 workers x 2 events (one duplicated), up to 1 fault or pause", {
    workers: 3,
    events: 2,
    modes: ["run-direct", "run-atomic"],
    maxFaults: 1,
    kinds: ["lose-response"],
    pause: true,
    extraCopies: 1,
    workMs: 350,
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
  /** Of those, histories showing no known issue's pattern (KNOWN_ISSUES in history.ts). */
  unexplained: number;
  /** The first failures (unexplained ones first), with their choice paths for `replayPath`. */
  failures: { path: number[]; violations: Violation[]; knownIssues: string[] }[];
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
    const r = await runHistory(c.config, {
      chooser,
      backend: (onSinkLanded) => memoryBackend({ onSinkLanded }),
      ...(o.wrapStore ? { wrapStore: o.wrapStore } : {}),
      sampleEvery: "step",
      enumerate: true,
    });
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
  return runHistory(c.config, {
    chooser: new DfsChooser(path),
    backend: (onSinkLanded) => memoryBackend({ onSinkLanded }),
    sampleEvery: "step",
    enumerate: true,
    trace: true,
  });
}
