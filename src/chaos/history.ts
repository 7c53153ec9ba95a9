import { createGuard, type GuardOutcome } from "../core/guard.js";
import { positionFromNumber } from "../core/position.js";
import { stateKey } from "../core/state-key.js";
import type { StateStore } from "../core/store.js";
import type { Backend } from "./backend.js";
import type { Chooser } from "./chooser.js";
import { ColdStarts } from "./cold-start.js";
import { type Worker, workerLoop } from "./delivery.js";
import { type FaultConfig, type FaultCounts, FaultInjector } from "./faults.js";
import { FaultyStore, type WorkerState } from "./faulty-store.js";
import { checkFinal } from "./invariants.js";
import { simNames } from "./names.js";
import { Observer, type Violation } from "./observer.js";
import { Source } from "./source.js";
import { VirtualScheduler } from "./virtual-time.js";

/** Wraps the shared state store; `forget` deletes an item as TTL does. */
export type StoreWrapper = (inner: StateStore, forget: (key: string) => Promise<void>) => StateStore;

export interface GuardSettings {
  leaseMs: number;
  heartbeatMs: number;
  clockSkewMs: number;
  busy: "wait" | "retry" | "supersede";
  inFlight: "wait" | "retry";
  waitIntervalMs: number;
  maxWaitIntervalMs: number;
}

/** How an event is handled; fixed per event in exhaustive runs, chosen per delivery otherwise. */
export type Mode = "run-atomic" | "run-direct" | "apply";

export interface HistoryConfig {
  workers: number;
  /** Ordered subjects and events per subject (positions 1..n). */
  subjects: number;
  eventsPerSubject: number;
  /** Dedupe-only events (no position, one subject). */
  dedupeEvents: number;
  guard: GuardSettings;
  /** Each worker's clock offset (ms). */
  offsets: number[];
  /**
   * The bound the clocks keep, by which a history is "within skew" (default: the guard's clockSkewMs). A test of
   * a misconfigured guard sets the guard's lower than the clocks' real bound.
   */
  declaredSkewMs?: number;
  faults: FaultConfig;
  /** Fixed modes per event (exhaustive), else chosen per delivery with these shares. */
  modes?: Mode[];
  applyShare: number;
  directShare: number;
  /** Handler work time (virtual ms) is uniform in [minWorkMs, maxWorkMs] (exhaustive runs: always the minimum). */
  minWorkMs?: number;
  maxWorkMs: number;
  source: {
    visibilityMs: number;
    retryDelayMs: readonly [number, number];
    maxReceives: number;
    reorder: boolean;
  };
  /** Extra messages of event 0 in the initial queue (duplicate deliveries racing from the start). */
  extraCopies: number;
  /** How often time may move on while store calls wait (slow requests), as a scheduling choice. */
  maxPostpone?: number;
  maxSteps: number;
  maxVirtualMs: number;
}

export interface SimEvent {
  index: number;
  subject: string;
  identity: string;
  position: string | undefined;
  key: string;
  /** The counter the folded effect increments. */
  counterId: string;
  acknowledged: boolean;
}

export interface Delivery {
  event: number;
  worker: number;
  call: number;
  mode: Mode;
  status: GuardOutcome<unknown>["status"] | "threw";
  acknowledged: boolean;
  /** Processed, but every folded write was stale: newer work holds its targets (inline state's one row). */
  superseded?: true;
}

export interface HistoryResult {
  violations: Violation[];
  /** Clocks differed by more than the guard's clockSkewMs: only fencing-guaranteed violations are reported. */
  beyondSkew: boolean;
  /** Every violation seen, reported or not. */
  allViolations: Violation[];
  faults: FaultCounts;
  completed: boolean;
  steps: number;
  virtualMs: number;
  deliveries: number;
  /** Known guard issues whose pattern this history shows (see KNOWN_ISSUES). */
  knownIssues: KnownIssue[];
  trace?: string[];
}

/**
 * Real violations the simulator found in the guard, not fixed yet (test/chaos/regressions.test.ts): recognised by
 * their pattern so that runs can tell them from anything new.
 */
export const KNOWN_ISSUES = {
  /**
   * A run's commit is refused because an OLDER event of the subject took its expired claim over; the guard says
   * `lease-lost` (acknowledged), but that holder commits the older event, never this one: this event is lost.
   */
  olderTakerLeaseLost: "lease-lost-to-older-event",
} as const;

export type KnownIssue = (typeof KNOWN_ISSUES)[keyof typeof KNOWN_ISSUES];

export interface HistoryDeps {
  chooser: Chooser;
  /** Makes the history's backend; `onSinkLanded` goes to the observer. */
  backend(onSinkLanded: (subject: string, pos: string, fence: number) => void): Backend;
  /** Namespace for subjects (DynamoDB histories share tables). */
  namespace?: string;
  /** Wraps the shared state store (tests: deliberately broken stores). */
  wrapStore?: StoreWrapper;
  /** Sample states and sinks after every step (memory), or after every delivery (DynamoDB: requests cost). */
  sampleEvery: "step" | "delivery";
  /** Branch on store faults and pauses instead of drawing them (exhaustive runs). */
  enumerate?: boolean;
  trace?: boolean;
}

/** What one running history's phases share: its scheduler, checks, stores, events, queue and what happened. */
export interface Run {
  readonly cfg: HistoryConfig;
  readonly chooser: Chooser;
  readonly sim: VirtualScheduler;
  readonly observer: Observer;
  readonly faults: FaultInjector;
  readonly backend: Backend;
  readonly events: SimEvent[];
  /** State keys and the subjects with a sink row (ordered events), sampled and checked at the end. */
  readonly keys: string[];
  readonly sinkSubjects: string[];
  readonly source: Source;
  readonly deliveries: Delivery[];
  readonly knownIssues: Set<KnownIssue>;
  /** SQL servers: cold starts (migrations) beside live traffic, at a chosen step (cold-start.ts). */
  readonly coldStarts: ColdStarts | undefined;
  /** Guard calls so far (numbering them), whether a delivery ended since the last sample, workers done. */
  calls: number;
  sampleDue: boolean;
  settled: number;
}

/** Runs one history: N workers drain a queue of events through guard.run / guard.apply under faults. */
export async function runHistory(cfg: HistoryConfig, deps: HistoryDeps): Promise<HistoryResult> {
  const { run, beyondSkew, shared } = setUp(cfg, deps);
  const workers = Array.from({ length: cfg.workers }, (_, id) => createWorker(run, shared, id));
  for (const w of workers) void workerLoop(run, w);
  const finished = await run.sim.run({
    maxSteps: cfg.maxSteps,
    maxVirtualMs: cfg.maxVirtualMs,
    afterStep: () => afterStep(run, deps.sampleEvery),
  });
  const completed = finished && run.settled === workers.length;
  await run.coldStarts?.settle();
  await sample(run);
  const { observer, backend, events, deliveries, keys, sinkSubjects } = run;
  await checkFinal({
    observer,
    backend,
    events,
    deliveries,
    completed,
    dlq: run.source.dlq,
    keys,
    sinkSubjects,
  });
  if (!completed)
    observer.violate(
      "I4",
      false,
      `history did not settle: ${run.settled}/${workers.length} workers done, waiting: ${run.sim.pendingGates.join(", ") || "timers only"}`,
    );
  return result(run, beyondSkew, completed);
}

/** The scheduler, checks, fault injector, stores, events and the queue holding one message per event. */
function setUp(cfg: HistoryConfig, deps: HistoryDeps) {
  const { chooser } = deps;
  const sim = new VirtualScheduler(chooser, cfg.maxPostpone ?? 0);
  const g = cfg.guard;
  const observer = new Observer(sim, {
    leaseMs: g.leaseMs,
    clockSkewMs: g.clockSkewMs,
    offsets: cfg.offsets,
    trace: deps.trace ?? false,
  });
  const faults = new FaultInjector(cfg.faults, chooser, deps.enumerate ?? false);
  const spread = Math.max(...cfg.offsets) - Math.min(...cfg.offsets);
  const beyondSkew = spread > (cfg.declaredSkewMs ?? g.clockSkewMs);
  if (spread > 0) faults.count(beyondSkew ? "skew-beyond" : "skew-within");
  const backend = deps.backend((s, p, f) => observer.sinkLanded(s, p, f));
  const shared = deps.wrapStore ? deps.wrapStore(backend.store, (key) => backend.forget(key)) : backend.store;
  const events = simEvents(cfg, deps.namespace ? `${deps.namespace}/` : "", chooser);
  const source = new Source(sim, chooser, faults, cfg.source);
  for (const e of events) source.send(e.index, chooser.int(0, cfg.faults.reorderWindowMs));
  for (let i = 0; i < cfg.extraCopies && events.length > 0; i++) source.send(0);
  const run: Run = {
    cfg,
    chooser,
    sim,
    observer,
    faults,
    backend,
    events,
    keys: [...new Set(events.map((e) => e.key))],
    sinkSubjects: [...new Set(events.filter((e) => e.position !== undefined).map((e) => e.subject))],
    source,
    deliveries: [],
    knownIssues: new Set(),
    coldStarts: ColdStarts.plan({ backend, sim, observer, faults }, chooser),
    calls: 0,
    sampleDue: true,
    settled: 0,
  };
  return { run, beyondSkew, shared };
}

/** Ordered subjects (positions 1..n), then the dedupe-only events, named by simNames (adversarial names). */
function simEvents(cfg: HistoryConfig, ns: string, chooser: Chooser): SimEvent[] {
  const names = simNames(cfg, ns, chooser);
  const events: SimEvent[] = [];
  for (const subject of names.ordered)
    for (let i = 1; i <= cfg.eventsPerSubject; i++)
      events.push(simEvent(events.length, ns, subject, `v${i}`, positionFromNumber(i)));
  for (const { subject, identity } of names.dedupe)
    events.push(simEvent(events.length, ns, subject, identity, undefined));
  return events;
}

/** A worker: its own clock (offset), the shared store behind its own fault decorator, and a guard over both. */
function createWorker(run: Run, shared: StateStore, id: number): Worker {
  const { cfg, sim, faults, observer, backend } = run;
  const g = cfg.guard;
  const state: WorkerState = { id, offsetMs: cfg.offsets[id] ?? 0, call: 0, frozenUntil: 0 };
  const store = new FaultyStore(shared, {
    sim,
    faults,
    observer,
    worker: state,
    leaseMs: g.leaseMs,
    reportAtomicWrites: !backend.sinkReportsItself,
  });
  const guard = createGuard({
    store,
    clock: sim.clock(state.offsetMs),
    leaseMs: g.leaseMs,
    heartbeatMs: g.heartbeatMs,
    clockSkewMs: g.clockSkewMs,
    busy: g.busy,
    inFlight: g.inFlight,
    waitIntervalMs: g.waitIntervalMs,
    maxWaitIntervalMs: g.maxWaitIntervalMs,
    expiresAfterSeconds: 3600,
  });
  return { state, guard };
}

/** Every state item and sink row, for the checks that compare one sample with the last. */
async function sample(run: Run): Promise<void> {
  for (const key of run.keys) {
    const { state, bytes } = await run.backend.readState(key);
    run.observer.sampleState(key, state, bytes);
  }
  for (const subject of run.sinkSubjects)
    run.observer.sampleSink(subject, await run.backend.readSink(subject));
}

async function afterStep(run: Run, every: HistoryDeps["sampleEvery"]): Promise<void> {
  await run.coldStarts?.afterStep();
  if (every === "step" || run.sampleDue) {
    run.sampleDue = false;
    await sample(run);
  }
  if (run.faults.ttl()) await ttlDelete(run);
}

/**
 * TTL deletes an item whose lease ended by every clock and that holds no committed event (deleting committed state
 * is the end of the dedupe window, outside what the guard promises).
 */
async function ttlDelete(run: Run): Promise<void> {
  const { cfg, sim } = run;
  const eligible: string[] = [];
  for (const key of run.keys) {
    const { state } = await run.backend.readState(key);
    if (!state || state.committedPosition !== undefined || state.status === "done") continue;
    const leaseEnd = (state.leaseUntilMs ?? 0) - Math.min(...cfg.offsets);
    if (state.status === "released" || leaseEnd + cfg.guard.clockSkewMs < sim.now) eligible.push(key);
  }
  if (eligible.length === 0) return;
  const key = eligible[run.chooser.choose(eligible.length, "ttl")] as string;
  run.faults.tookTtl();
  run.observer.log(() => `TTL deletes ${key}`);
  await run.backend.forget(key);
}

function result(run: Run, beyondSkew: boolean, completed: boolean): HistoryResult {
  const { observer, faults, sim } = run;
  const all = observer.violations;
  return {
    violations: beyondSkew ? all.filter((v) => v.fencing) : all,
    beyondSkew,
    allViolations: all,
    faults: faults.counts,
    completed,
    steps: sim.steps,
    virtualMs: observer.elapsed,
    deliveries: run.deliveries.length,
    knownIssues: [...run.knownIssues],
    ...(observer.trace ? { trace: observer.trace } : {}),
  };
}

/** The counter's id is the event's index (in the namespace): subjects and identities may hold any text. */
function simEvent(
  index: number,
  ns: string,
  subject: string,
  identity: string,
  position: string | undefined,
): SimEvent {
  return {
    index,
    subject,
    identity,
    position,
    key: stateKey(subject, identity, position !== undefined),
    counterId: `${ns}c${index}`,
    acknowledged: false,
  };
}
