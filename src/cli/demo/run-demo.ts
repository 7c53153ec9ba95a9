import type { LocalRuntime } from "../../local/runtime.js";
import type { TraceEvent } from "../../sim/live/trace.js";
import type { KeyTimeline, Scenario, ScenarioName, ScenarioResult } from "./scenario.js";
import type { DemoStateStoreKind, DemoStates } from "./state-stores.js";

/** One row of the comparison: the fields of `eonce demo --json`, plus what the report shows. */
export interface ScenarioReport {
  name: ScenarioName;
  guard: "off" | "on";
  /** Records handed to the function (duplicates, retries and redeliveries included). */
  deliveries: number;
  distinctEvents: number;
  /** Lambda invocations (including failed, timed-out and crashed ones). */
  handlerRuns: number;
  duplicateEffects: number;
  staleResults: number;
  lostEvents: number;
  durationMs: number;
  /** Guard on: where the guard kept its state (`eonce demo --state-store`). */
  stateStore?: DemoStateStoreKind;
  title: string;
  description: string;
  details: Record<string, number>;
  notes: string[];
  timelines?: KeyTimeline[];
  samples?: { label: string; dataUri: string }[];
}

export interface DemoReport {
  seed: number;
  scale: number;
  wallTimeMs: number;
  scenarios: ScenarioReport[];
}

export interface DemoProgress {
  scenario: ScenarioName;
  guard: "off" | "on";
  /** Handler runs so far in this part, capped below `total` until the part ends. */
  done: number;
  total: number;
}

export interface RunDemoOptions {
  runtime: LocalRuntime;
  scenarios: Scenario[];
  seed: number;
  /** Sizes × scale; 1 for the demo. */
  scale?: number;
  /** Where the guard's state is kept; default the runtime's DynamoDB Local. */
  states?: DemoStates;
  /** The engine of `states`, for the report; default `dynamodb`. */
  stateStore?: DemoStateStoreKind;
  /** Which modes, default both (off first). */
  guards?: ("off" | "on")[];
  onProgress?: (p: DemoProgress) => void;
}

let runCounter = 0;

/** Runs every scenario guard off, then on, on one local runtime; counts come from the scenarios' stores. */
export async function runDemo(options: RunDemoOptions): Promise<DemoReport> {
  const started = Date.now();
  const scale = options.scale ?? 1;
  const reports: ScenarioReport[] = [];
  for (const scenario of options.scenarios) {
    for (const guard of options.guards ?? ["off", "on"]) {
      reports.push(await runOne(options, scenario, guard, scale));
    }
  }
  return { seed: options.seed, scale, wallTimeMs: Date.now() - started, scenarios: reports };
}

async function runOne(
  options: RunDemoOptions,
  scenario: Scenario,
  guard: "off" | "on",
  scale: number,
): Promise<ScenarioReport> {
  const { runtime } = options;
  // Names must be unique per runtime (a test may run several seeds on one) and S3-safe.
  const prefix = `${scenario.name}-${guard}-s${options.seed}-${++runCounter}`;
  const total = Math.max(1, scenario.expectedRuns(scale));
  let done = 0;
  const report = (value: number) =>
    options.onProgress?.({ scenario: scenario.name, guard, done: value, total });
  runtime.trace.clear();
  const unsubscribe = runtime.trace.subscribe((e) => {
    if (e.type === "run" && e.functionName.startsWith(prefix) && done < total - 1) report(++done);
  });
  report(0);
  const t0 = Date.now();
  let result: ScenarioResult;
  try {
    result = await scenario.run({
      runtime,
      guard: guard === "on",
      seed: options.seed,
      scale,
      prefix,
      functionPrefix: prefix,
      ...(options.states ? { states: options.states } : {}),
    });
  } finally {
    unsubscribe();
  }
  const durationMs = Date.now() - t0;
  report(total);
  const counted = countRuntime(runtime.trace.events, prefix);
  runtime.trace.clear();
  return {
    name: scenario.name,
    guard,
    deliveries: counted.deliveries,
    distinctEvents: result.measured.distinctEvents,
    handlerRuns: counted.handlerRuns,
    duplicateEffects: result.measured.duplicateEffects,
    staleResults: result.measured.staleResults,
    lostEvents: result.measured.lostEvents,
    durationMs,
    ...(guard === "on" ? { stateStore: options.stateStore ?? "dynamodb" } : {}),
    title: scenario.title,
    description: scenario.description,
    details: result.details,
    notes: result.notes,
    ...(result.timelines ? { timelines: result.timelines } : {}),
    ...(result.samples ? { samples: result.samples } : {}),
  };
}

/** Deliveries (records handed over) and runs: the runtime's own numbers, which it alone can know. */
function countRuntime(
  events: readonly TraceEvent[],
  prefix: string,
): { deliveries: number; handlerRuns: number } {
  let deliveries = 0;
  let handlerRuns = 0;
  for (const e of events) {
    if (e.type === "delivery" && e.functionName.startsWith(prefix)) deliveries += e.records.length;
    if (e.type === "run" && e.functionName.startsWith(prefix)) handlerRuns++;
  }
  return { deliveries, handlerRuns };
}

/** The `--json` shape: exactly the fields the issue specifies. */
export function toJson(report: DemoReport): { scenarios: Record<string, unknown>[] } {
  return {
    scenarios: report.scenarios.map((s) => ({
      name: s.name,
      guard: s.guard,
      deliveries: s.deliveries,
      distinctEvents: s.distinctEvents,
      handlerRuns: s.handlerRuns,
      duplicateEffects: s.duplicateEffects,
      staleResults: s.staleResults,
      lostEvents: s.lostEvents,
      durationMs: s.durationMs,
    })),
  };
}
