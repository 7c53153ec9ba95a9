import { createGuard, type Guard, type GuardOutcome } from "../core/guard.js";
import { isAcknowledged } from "../core/outcomes.js";
import { positionBefore, positionFromNumber } from "../core/position.js";
import { stateKey } from "../core/state-key.js";
import type { StateStore } from "../core/store.js";
import type { Backend } from "./backend.js";
import type { Chooser } from "./chooser.js";
import { type FaultConfig, type FaultCounts, FaultInjector } from "./faults.js";
import { FaultyStore, type WorkerState } from "./faulty-store.js";
import { checkFinal } from "./invariants.js";
import { Observer, type Violation } from "./observer.js";
import { type Receipt, Source } from "./source.js";
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
  knownIssues: string[];
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

/** Runs one history: N workers drain a queue of events through guard.run / guard.apply under faults. */
export async function runHistory(cfg: HistoryConfig, deps: HistoryDeps): Promise<HistoryResult> {
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
  const ns = deps.namespace ? `${deps.namespace}/` : "";

  const events: SimEvent[] = [];
  for (let s = 0; s < cfg.subjects; s++)
    for (let i = 1; i <= cfg.eventsPerSubject; i++) {
      const subject = `${ns}s${s}`;
      const position = positionFromNumber(i);
      const identity = `v${i}`;
      events.push(simEvent(events.length, subject, identity, position));
    }
  for (let i = 0; i < cfg.dedupeEvents; i++)
    events.push(simEvent(events.length, `${ns}d`, `m${i}`, undefined));
  const keys = [...new Set(events.map((e) => e.key))];
  const sinkSubjects = [...new Set(events.filter((e) => e.position !== undefined).map((e) => e.subject))];

  const source = new Source(sim, chooser, faults, cfg.source);
  for (const e of events) source.send(e.index, chooser.int(0, cfg.faults.reorderWindowMs));
  for (let i = 0; i < cfg.extraCopies && events.length > 0; i++) source.send(0);

  const deliveries: Delivery[] = [];
  const knownIssues = new Set<string>();
  let calls = 0;
  let sampleDue = true;
  let settled = 0;

  const workers: { state: WorkerState; guard: Guard }[] = [];
  for (let id = 0; id < cfg.workers; id++) {
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
    workers.push({ state, guard });
  }

  const pickMode = (e: SimEvent): Mode => {
    const fixed = cfg.modes?.[e.index];
    if (fixed) return e.position === undefined && fixed !== "apply" ? "run-atomic" : fixed;
    if (chooser.chance(cfg.applyShare)) return "apply";
    if (e.position === undefined) return "run-atomic";
    return chooser.chance(cfg.directShare) ? "run-direct" : "run-atomic";
  };

  const deliver = async (w: { state: WorkerState; guard: Guard }, r: Receipt) => {
    const m = r.message;
    const e = events[m.event] as SimEvent;
    const call = ++calls;
    w.state.call = call;
    const mode = pickMode(e);
    observer.log(
      () =>
        `w${w.state.id} receives ${e.subject}/${e.identity} (message ${m.id}, receive ${r.receive}) -> ${mode}`,
    );
    const ge = {
      subject: e.subject,
      identity: e.identity,
      ...(e.position !== undefined ? { position: e.position } : {}),
    };
    // Waiting gives up before the invocation's deadline, as the Lambda adapters set it from the remaining time.
    const runOptions = { deadlineMs: r.deadline - 500 + w.state.offsetMs };
    let out: GuardOutcome<unknown> | undefined;
    try {
      if (mode === "apply") {
        out = await w.guard.apply(
          ge,
          (ctx) => {
            ctx.atCommit(backend.counter(e.counterId, ctx.fence));
            if (e.position !== undefined) ctx.atCommit(backend.sinkAtomic(e.subject, e.position, ctx.fence));
            return { w: w.state.id };
          },
          runOptions,
        );
      } else {
        out = await w.guard.run(
          ge,
          async (ctx) => {
            try {
              ctx.atCommit(backend.counter(e.counterId, ctx.fence));
              if (faults.pause()) {
                const ms = g.leaseMs + g.clockSkewMs + chooser.int(50, g.leaseMs);
                observer.log(() => `w${w.state.id} PAUSES ${ms}ms holding ${e.key} f${ctx.fence}`);
                observer.stopped(e.key, ctx.fence);
                w.state.frozenUntil = sim.now + ms;
                await sim.sleep(ms); // frozen: it cannot see its signal
                observer.log(
                  () => `w${w.state.id} wakes (signal ${ctx.signal.aborted ? "aborted" : "live"})`,
                );
              } else {
                const ms = chooser.int(cfg.minWorkMs ?? 0, cfg.maxWorkMs);
                if (ms > 0) await sim.sleep(ms, ctx.signal);
                if (ctx.signal.aborted) throw ctx.signal.reason; // a well-behaved handler stops
              }
              if (e.position !== undefined) {
                if (mode === "run-direct") {
                  await sim.gate(w.state.id, `sink ${e.subject}`);
                  const r = await sim.track(() =>
                    backend.sinkPut(e.subject, e.position as string, ctx.fence),
                  );
                  if (r === "applied" && !backend.sinkReportsItself)
                    observer.sinkLanded(e.subject, e.position, ctx.fence);
                  observer.log(
                    () => `w${w.state.id} sink put ${e.subject} ${e.position} f${ctx.fence} -> ${r}`,
                  );
                } else ctx.atCommit(backend.sinkAtomic(e.subject, e.position, ctx.fence));
              }
              return { w: w.state.id };
            } finally {
              observer.stopped(e.key, ctx.fence);
            }
          },
          runOptions,
        );
      }
    } catch (error) {
      observer.violate("I4", false, `delivery of ${e.identity} ended without an outcome: ${String(error)}`);
    }
    observer.callEnded(call);
    if (
      out?.status === "lease-lost" &&
      e.position !== undefined &&
      out.current &&
      positionBefore(out.current.position, e.position)
    )
      knownIssues.add(KNOWN_ISSUES.olderTakerLeaseLost);
    const status = out?.status ?? "threw";
    const acknowledged = out ? isAcknowledged(out.status) : false;
    if (source.timedOut(r)) {
      observer.log(
        () => `w${w.state.id} ${e.subject}/${e.identity} -> ${status}, but the invocation timed out`,
      );
    } else {
      observer.log(
        () => `w${w.state.id} ${e.subject}/${e.identity} -> ${status}${acknowledged ? " (ack)" : ""}`,
      );
      deliveries.push({ event: e.index, worker: w.state.id, call, mode, status, acknowledged });
      if (acknowledged) {
        e.acknowledged = true;
        source.ack(r);
      } else source.nack(r);
    }
    sampleDue = true;
  };

  const loop = async (w: { state: WorkerState; guard: Guard }) => {
    for (;;) {
      const m = source.receive();
      if (m === "done") break;
      if ("waitMs" in m) await sim.sleep(m.waitMs);
      else await deliver(w, m);
    }
    settled++;
  };

  const sample = async () => {
    for (const key of keys) {
      const { state, bytes } = await backend.readState(key);
      observer.sampleState(key, state, bytes);
    }
    for (const subject of sinkSubjects) observer.sampleSink(subject, await backend.readSink(subject));
  };

  const afterStep = async () => {
    if (deps.sampleEvery === "step" || sampleDue) {
      sampleDue = false;
      await sample();
    }
    if (faults.ttl()) await ttlDelete();
  };

  // TTL deletes an item whose lease ended by every clock and that holds no committed event (deleting committed
  // state is the end of the dedupe window, outside what the guard promises).
  const ttlDelete = async () => {
    const eligible: string[] = [];
    for (const key of keys) {
      const { state } = await backend.readState(key);
      if (!state || state.committedPosition !== undefined || state.status === "done") continue;
      const leaseEnd = (state.leaseUntilMs ?? 0) - Math.min(...cfg.offsets);
      if (state.status === "released" || leaseEnd + g.clockSkewMs < sim.now) eligible.push(key);
    }
    if (eligible.length === 0) return;
    const key = eligible[chooser.choose(eligible.length, "ttl")] as string;
    faults.tookTtl();
    observer.log(() => `TTL deletes ${key}`);
    await backend.forget(key);
  };

  for (const w of workers) void loop(w);
  const finished = await sim.run({ maxSteps: cfg.maxSteps, maxVirtualMs: cfg.maxVirtualMs, afterStep });
  const completed = finished && settled === workers.length;
  await sample();
  await checkFinal({ observer, backend, events, deliveries, completed, dlq: source.dlq, keys, sinkSubjects });
  if (!completed)
    observer.violate(
      "I4",
      false,
      `history did not settle: ${settled}/${workers.length} workers done, waiting: ${sim.pendingGates.join(", ") || "timers only"}`,
    );

  const all = observer.violations;
  return {
    violations: beyondSkew ? all.filter((v) => v.fencing) : all,
    beyondSkew,
    allViolations: all,
    faults: faults.counts,
    completed,
    steps: sim.steps,
    virtualMs: observer.elapsed,
    deliveries: deliveries.length,
    knownIssues: [...knownIssues],
    ...(observer.trace ? { trace: observer.trace } : {}),
  };
}

function simEvent(index: number, subject: string, identity: string, position: string | undefined): SimEvent {
  return {
    index,
    subject,
    identity,
    position,
    key: stateKey(subject, identity, position !== undefined),
    counterId: `${subject}#${identity}`,
    acknowledged: false,
  };
}
