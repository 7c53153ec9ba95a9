import { createGuard, type Guard } from "../core/guard.js";
import { positionFromNumber } from "../core/position.js";
import { stateKey } from "../core/state-key.js";
import type { StateStore } from "../core/store.js";
import type { Backend } from "./backend.js";
import type { Chooser } from "./chooser.js";
import { ColdStarts } from "./cold-start.js";
import { type Worker, workerLoop } from "./delivery.js";
import { type FaultCounts, HistoryFaultInjector } from "./faults.js";
import { FaultyStore, type WorkerState } from "./faulty-store.js";
import { checkForeign, plantForeign, refusedEvents } from "./foreign-values.js";
import type { HistoryConfig } from "./history-config.js";
import { hostileKeyEvents } from "./hostile-keys.js";
import { checkFinal } from "./invariants.js";
import type { KnownIssue } from "./known-issues.js";
import { simNames } from "./names.js";
import { HistoryObserver, type Violation } from "./observer.js";
import type { RunningHistory } from "./running-history.js";
import type { SimEvent } from "./sim-event.js";
import { Source } from "./source.js";
import { VirtualScheduler } from "./virtual-time.js";

/** Wraps the shared state store; `forget` deletes an item as TTL does. */
export type StoreWrapper = (inner: StateStore, forget: (key: string) => Promise<void>) => StateStore;

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

export interface HistoryDeps {
  chooser: Chooser;
  /** Makes the history's backend; `onSinkLanded` goes to the observer. */
  backend(onSinkLanded: (subject: string, pos: string, fence: number) => void): Backend;
  /** Namespace for subjects (DynamoDB histories share tables). */
  namespace?: string;
  /** Wraps the shared state store (tests: deliberately broken stores). */
  wrapStore?: StoreWrapper;
  /** `--break lossy-keys`: the guard gets the lossy spelling of hostile names (hostile-keys.ts). */
  lossyKeys?: boolean;
  /** Sample states and sinks after every step (memory), or after every delivery (DynamoDB: requests cost). */
  sampleEvery: "step" | "delivery";
  /** Branch on store faults and pauses instead of drawing them (exhaustive runs). */
  enumerate?: boolean;
  trace?: boolean;
}

/** Runs one history: N workers drain a queue of events through guard.run / guard.apply under faults. */
export async function runHistory(cfg: HistoryConfig, deps: HistoryDeps): Promise<HistoryResult> {
  const { run, beyondSkew, shared } = setUp(cfg, deps);
  await plantForeign(run);
  const workers = Array.from({ length: cfg.workers }, (_, id) => createWorker(run, shared, id));
  for (const w of workers) void workerLoop(run, w);
  const finished = await run.sim.run({
    maxSteps: cfg.maxSteps,
    maxVirtualMs: cfg.maxVirtualMs,
    afterStep: () => afterStep(run, deps.sampleEvery),
  });
  return finishHistory(run, beyondSkew, finished, workers.length);
}

/** After the workers: cold starts settled, a last sample, the final checks, and the history's result. */
export async function finishHistory(
  run: RunningHistory,
  beyondSkew: boolean,
  finished: boolean,
  workers: number,
): Promise<HistoryResult> {
  const completed = finished && run.workersDone === workers;
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
    refused: refusedEvents(run),
  });
  await checkForeign(run);
  if (!completed)
    observer.violate(
      "I4",
      false,
      `history did not settle: ${run.workersDone}/${workers} workers done, waiting: ${run.sim.pendingGates.join(", ") || "timers only"}`,
    );
  return result(run, beyondSkew, completed);
}

/** The scheduler, checks, fault injector, stores, events and the queue holding one message per event. */
/**
 * `hostileKeys: false` leaves out the events whose names break the key rule: the SQS wrapper dead-letters them (its
 * malformed route), which the simulated queue does not model (tested in test/core/key-rule.test.ts instead).
 */
export function setUp(cfg: HistoryConfig, deps: HistoryDeps, { hostileKeys = true } = {}) {
  const { chooser } = deps;
  const sim = new VirtualScheduler(chooser, cfg.maxPostpone ?? 0);
  const g = cfg.guard;
  const observer = new HistoryObserver(sim, {
    leaseMs: g.leaseMs,
    clockSkewMs: g.clockSkewMs,
    offsets: cfg.offsets,
    trace: deps.trace ?? false,
  });
  const faults = new HistoryFaultInjector(cfg.faults, chooser, deps.enumerate ?? false);
  const spread = Math.max(...cfg.offsets) - Math.min(...cfg.offsets);
  const beyondSkew = spread > (cfg.declaredSkewMs ?? g.clockSkewMs);
  if (spread > 0) faults.count(beyondSkew ? "skew-beyond" : "skew-within");
  const backend = deps.backend((s, p, f) => observer.sinkLanded(s, p, f));
  const shared = deps.wrapStore ? deps.wrapStore(backend.store, (key) => backend.forget(key)) : backend.store;
  const ns = deps.namespace ? `${deps.namespace}/` : "";
  const events = simEvents(cfg, ns, chooser, hostileKeys ? { lossy: deps.lossyKeys ?? false } : undefined);
  const source = new Source(sim, chooser, faults, cfg.source);
  for (const e of events) source.send(e.index, chooser.int(0, cfg.faults.reorderWindowMs));
  for (let i = 0; i < cfg.extraCopies && events.length > 0; i++) source.send(0);
  const run: RunningHistory = {
    cfg,
    chooser,
    sim,
    observer,
    faults,
    backend,
    events,
    // A malformed event has no state of its own: it is refused before any request.
    keys: [...new Set(events.filter((e) => !e.malformed).map((e) => e.key))],
    sinkSubjects: [
      ...new Set(events.filter((e) => e.position !== undefined && !e.malformed).map((e) => e.subject)),
    ],
    source,
    deliveries: [],
    knownIssues: new Set(),
    coldStarts: ColdStarts.plan({ backend, sim, observer, faults }, chooser),
    calls: 0,
    sampleDue: true,
    workersDone: 0,
  };
  return { run, beyondSkew, shared };
}

/**
 * Ordered subjects (positions 1..n), then the dedupe-only events, named by simNames (adversarial names), then the
 * hostile keys' events (hostile-keys.ts).
 */
function simEvents(
  cfg: HistoryConfig,
  ns: string,
  chooser: Chooser,
  hostile: { lossy: boolean } | undefined,
): SimEvent[] {
  const names = simNames(cfg, ns, chooser);
  const events: SimEvent[] = [];
  for (const subject of names.ordered)
    for (let i = 1; i <= cfg.eventsPerSubject; i++)
      events.push(simEvent(events.length, ns, subject, `v${i}`, positionFromNumber(i)));
  for (const { subject, identity } of names.dedupe)
    events.push(simEvent(events.length, ns, subject, identity, undefined));
  if (!hostile) return events;
  const { eventsPerSubject } = cfg;
  events.push(...hostileKeyEvents({ ns, first: events.length, eventsPerSubject, ...hostile }, chooser));
  return events;
}

/** A worker: its own clock (offset), the shared store behind its own fault decorator, and a guard over both. */
export function createWorker(run: RunningHistory, shared: StateStore, id: number): Worker {
  const state: WorkerState = { id, offsetMs: run.cfg.offsets[id] ?? 0, call: 0, frozenUntil: 0 };
  return { state, guard: guardFor(run, shared, state) };
}

/** A guard as the history configures it, over the shared store behind a fault decorator of `state`'s own. */
export function guardFor(run: RunningHistory, shared: StateStore, state: WorkerState): Guard {
  const { cfg, sim, faults, observer, backend } = run;
  const g = cfg.guard;
  const store = new FaultyStore(shared, {
    sim,
    faults,
    observer,
    worker: state,
    leaseMs: g.leaseMs,
    reportAtomicWrites: !backend.sinkReportsItself,
  });
  return createGuard({
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
    ...(run.outbox ? { outbox: run.outbox } : {}),
  });
}

/** Every state item and sink row, for the checks that compare one sample with the last. */
export async function sample(run: RunningHistory): Promise<void> {
  for (const key of run.keys) {
    const { state, bytes } = await run.backend.readState(key);
    run.observer.sampleState(key, state, bytes);
  }
  for (const subject of run.sinkSubjects)
    run.observer.sampleSink(subject, await run.backend.readSink(subject));
}

export async function afterStep(run: RunningHistory, every: HistoryDeps["sampleEvery"]): Promise<void> {
  await run.coldStarts?.afterStep();
  if (every === "step" || run.sampleDue) {
    run.sampleDue = false;
    await sample(run);
  }
  // After the samples: the next one compares what the failover left with what was there before it.
  if (run.backend.serverFaults)
    for (const f of await run.backend.serverFaults()) {
      run.faults.count(f.kind);
      run.observer.log(() => f.detail);
    }
  if (run.faults.ttl()) await ttlDelete(run);
}

/**
 * TTL deletes an item whose lease ended by every clock (a released one: a lease after its claim) and that holds no committed event (deleting committed state
 * is the end of the dedupe window, outside what the guard promises).
 */
async function ttlDelete(run: RunningHistory): Promise<void> {
  const { cfg, sim } = run;
  const eligible: string[] = [];
  for (const key of run.keys) {
    const { state } = await run.backend.readState(key);
    if (!state || state.committedPosition !== undefined || state.status === "done") continue;
    // A released item keeps no lease, but TTL deletes an item at least a lease after its last write (the guard
    // relies on it: src/core/acquire.ts), so no earlier than a lease after its claim, which its fence dates.
    const leaseUntilMs =
      state.status === "released"
        ? Math.floor(state.fence / 1000) + cfg.guard.leaseMs
        : (state.leaseUntilMs ?? 0);
    const leaseEnd = leaseUntilMs - Math.min(...cfg.offsets);
    if (leaseEnd + cfg.guard.clockSkewMs < sim.now) eligible.push(key);
  }
  if (eligible.length === 0) return;
  const key = eligible[run.chooser.choose(eligible.length, "ttl")] as string;
  run.faults.tookTtl();
  run.observer.log(() => `TTL deletes ${key}`);
  await run.backend.forget(key);
}

export function result(run: RunningHistory, beyondSkew: boolean, completed: boolean): HistoryResult {
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
