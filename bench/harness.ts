import { cpus, freemem, loadavg, totalmem } from "node:os";
import { type DynamoDBLocal, startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { type Correctness, checkOutput } from "./check.js";
import { type BenchClient, createBenchClient } from "./client.js";
import { type CpuMeter, cpuMeter } from "./cpu.js";
import { type BenchEvent, makeEvent, rng, shuffle } from "./events.js";
import { oursInline, oursInlineWrapper } from "./impls/inline.js";
import { ours, oursApply } from "./impls/ours.js";
import { powertools } from "./impls/powertools.js";
import { sequencerLock } from "./impls/sequencer-lock.js";
import type { HandlerPlan, Implementation, Instance } from "./impls/types.js";
import { rawWrite, unguarded } from "./impls/unguarded.js";
import { conditionalPut, getThenPut } from "./impls/usual-fixes.js";
import { type InjectedRun, measureInjectedLatency } from "./injected-latency.js";
import { dynamoDBLocalVersion } from "./jar-version.js";
import { type Progress, silentProgress } from "./progress.js";
import { type DeliverAllResult, deliverAll, type PlannedDelivery } from "./runner.js";
import { percentile, round, type Spread, spread } from "./stats.js";
import { measureStreams, type StreamResults } from "./stream-path.js";
import { measureWrapperPath, type WrapperResults } from "./wrapper-path.js";

export interface BenchOptions {
  /** Use this DynamoDB Local instead of starting one (tests share theirs). */
  endpoint?: string;
  /** Distinct keys per throughput run. */
  events: number;
  /** Latency repetitions. */
  reps: number;
  /** Measured events per implementation per latency repetition. */
  latencyEvents: number;
  /** Worker counts for the throughput runs. */
  workers: number[];
  hotKeyVersions: number;
  hotKeyWorkers: number;
  /** Object keys in the correctness storm (each: newest version twice, an older one once). */
  stormKeys: number;
  /** Events per implementation that warm DynamoDB Local's JIT before anything is measured. */
  warmupEvents: number;
  seed: number;
  /** The wrapper path (bench/wrapper-path.ts): measured invocations per row and repetition, and repetitions. */
  wrapperInvocations: number;
  wrapperReps: number;
  /** Injected latency (bench/latency-proxy.ts): one-way delays, ms (each a separate run), and their jitter. */
  injectedOneWayMs: number[];
  jitterMs: number;
  /** Measured events per implementation per repetition, and repetitions, at each injected latency. */
  injectedEvents: number;
  injectedReps: number;
  /**
   * The stream path (bench/stream-path.ts): records per batch and partition keys (items) in it, measured batches per
   * row and repetition, and repetitions; at the loopback and at each of `injectedOneWayMs`.
   */
  streamBatch: number;
  streamSubjects: number;
  streamBatches: number;
  streamReps: number;
  /** Run only these scenarios (development); default all. */
  only?: Scenario[];
  progress?: Progress;
}

export const SCENARIOS = [
  "requests",
  "latency",
  "hotkey",
  "throughput",
  "storm",
  "wrappers",
  "injected",
  "streams",
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export const FULL: Omit<BenchOptions, "endpoint" | "progress" | "only"> = {
  events: 10_000,
  reps: 5,
  latencyEvents: 200,
  workers: [1, 4, 16],
  hotKeyVersions: 50,
  hotKeyWorkers: 10,
  stormKeys: 300,
  warmupEvents: 500,
  wrapperInvocations: 150,
  wrapperReps: 3,
  injectedOneWayMs: [1, 4, 8],
  jitterMs: 0,
  injectedEvents: 100,
  injectedReps: 3,
  streamBatch: 100,
  streamSubjects: 4,
  streamBatches: 5,
  streamReps: 3,
  seed: 20261121,
};

/** Small numbers for the test suite: every scenario runs, nothing is long enough to time. */
export const QUICK: Omit<BenchOptions, "endpoint" | "progress" | "only"> = {
  events: 100,
  reps: 2,
  latencyEvents: 20,
  workers: [1, 4, 16],
  hotKeyVersions: 50,
  hotKeyWorkers: 10,
  stormKeys: 30,
  warmupEvents: 20,
  wrapperInvocations: 5,
  wrapperReps: 1,
  injectedOneWayMs: [4],
  jitterMs: 0,
  injectedEvents: 8,
  injectedReps: 1,
  streamBatch: 10,
  streamSubjects: 3,
  streamBatches: 2,
  streamReps: 1,
  seed: 20261121,
};

// The implementations, by scenario. Busy policies only matter when one key is contended (hot key).
const OURS = ours("ours", { busy: "wait", atomic: true });
const OURS_PUT = ours("ours-put", { busy: "wait", atomic: false });
const OURS_APPLY = oursApply("ours-apply", { busy: "wait" });
// Inline state: the guard's state in the effect's own row (`apply`: one UpdateItem; `run`: two).
const INLINE = oursInline("inline", { busy: "wait", mode: "apply" });
const INLINE_RUN = oursInline("inline-run", { busy: "wait", mode: "run" });
// The same through the Lambda wrapper (s3Handler): parse, observe, answer, around guard.apply / guard.run.
const INLINE_WRAPPER = oursInlineWrapper("inline-wrapper-apply", { mode: "apply" });
const INLINE_WRAPPER_RUN = oursInlineWrapper("inline-wrapper-run", { mode: "run" });
export const IMPLEMENTATIONS = {
  ours: OURS,
  "ours-apply": OURS_APPLY,
  inline: INLINE,
  "inline-run": INLINE_RUN,
  "inline-wrapper-apply": INLINE_WRAPPER,
  "inline-wrapper-run": INLINE_WRAPPER_RUN,
  "ours-put": OURS_PUT,
  powertools,
  "get-then-put": getThenPut,
  "conditional-put": conditionalPut,
  "sequencer-lock": sequencerLock,
  unguarded,
  rawWrite,
} as const;
const REQUESTS: Implementation[] = [
  OURS,
  OURS_APPLY,
  INLINE,
  INLINE_RUN,
  INLINE_WRAPPER,
  INLINE_WRAPPER_RUN,
  OURS_PUT,
  powertools,
  getThenPut,
  conditionalPut,
  sequencerLock,
  unguarded,
];
const LATENCY: Implementation[] = [
  unguarded,
  OURS,
  OURS_APPLY,
  INLINE,
  INLINE_RUN,
  INLINE_WRAPPER,
  INLINE_WRAPPER_RUN,
  rawWrite,
  OURS_PUT,
  powertools,
  getThenPut,
  conditionalPut,
  sequencerLock,
];
const HOT_KEY: Implementation[] = [
  ours("ours-wait", { busy: "wait", atomic: true }),
  ours("ours-retry", { busy: "retry", atomic: true }),
  ours("ours-supersede", { busy: "supersede", atomic: true }),
  ours("ours-put-supersede", { busy: "supersede", atomic: false }),
  oursApply("ours-apply-wait", { busy: "wait" }),
  oursApply("ours-apply-retry", { busy: "retry" }),
  oursApply("ours-apply-supersede", { busy: "supersede" }),
  oursInline("inline-wait", { busy: "wait", mode: "apply" }),
  oursInline("inline-retry", { busy: "retry", mode: "apply" }),
  oursInline("inline-supersede", { busy: "supersede", mode: "apply" }),
  powertools,
  getThenPut,
  conditionalPut,
  sequencerLock,
];
// ours-put is left out here only to keep the full run within a few minutes: it is the same guard, measured
// in every other scenario. The raw write is measured before ours, between ours and ours-apply, and after
// ours-apply (see measureThroughput).
const THROUGHPUT: Implementation[] = [
  OURS,
  OURS_APPLY,
  INLINE,
  INLINE_WRAPPER,
  INLINE_RUN,
  powertools,
  getThenPut,
  conditionalPut,
  sequencerLock,
];
const STORM: Implementation[] = [
  OURS,
  OURS_APPLY,
  INLINE,
  INLINE_RUN,
  INLINE_WRAPPER,
  INLINE_WRAPPER_RUN,
  OURS_PUT,
  powertools,
  getThenPut,
  conditionalPut,
  sequencerLock,
  unguarded,
];

// At injected latency: every path of ours, the baselines, and rawWrite (the reference of the ratios).
const INJECTED: Implementation[] = [
  rawWrite,
  unguarded,
  conditionalPut,
  INLINE,
  INLINE_RUN,
  INLINE_WRAPPER,
  INLINE_WRAPPER_RUN,
  OURS_APPLY,
  OURS,
  OURS_PUT,
  powertools,
  getThenPut,
  sequencerLock,
];

/** A redelivery waits this long: a stand-in for the SQS visibility timeout or Lambda's async retry (minutes). */
const REDELIVERY_DELAY_MS = 250;
const MAX_DELIVERIES = 100;

export interface RequestCounts {
  new: number;
  duplicate: number;
  stale: number;
  failed: number;
  /** Requests by command for one event of each kind. */
  breakdown: Record<"new" | "duplicate" | "stale" | "failed", Record<string, number>>;
  /** Capacity units per event of each kind (mean of the samples), from DynamoDB's ConsumedCapacity. */
  capacity: Record<"new" | "duplicate" | "stale" | "failed", Capacity>;
  /** A new event's write units by table role (`out`, `state`, `idem`, `lock`); absent in reports before it. */
  newWcuByRole?: Record<string, number>;
  correctness: Correctness;
}

export interface Capacity {
  wcu: number;
  rcu: number;
  /** The part of `wcu` estimated for refused writes, which DynamoDB Local does not report (bench/capacity.ts). */
  estimatedWcu: number;
}

export interface LatencyResult {
  p50Ms: Spread;
  p99Ms: Spread;
  /** Ratio to the unguarded handler's percentile in the same repetition. */
  ratioP50: Spread;
  ratioP99: Spread;
}

export interface HotKeyResult {
  handlerRuns: number;
  staleRuns: number;
  waitMs: number;
  redeliveries: number;
  elapsedMs: number;
  finalVersion: number | undefined;
  correct: boolean;
  correctness: Correctness;
  outcomes: DeliverAllResult["outcomes"];
  /** Write units per version delivered, by table role, contention included; absent in reports before it. */
  wcuPerVersionByRole?: Record<string, number>;
}

export interface ThroughputRun {
  eventsPerSecond: number;
  requestsPerEvent: number;
  /** Write and read units per event over the whole run (DynamoDB's ConsumedCapacity). */
  wcuPerEvent: number;
  rcuPerEvent: number;
  /** CPU per event: this process (SDK client + implementation) and DynamoDB Local's JVM. */
  clientCpuMsPerEvent: number;
  serverCpuMsPerEvent: number | undefined;
  elapsedMs: number;
  correctness: Correctness;
  errors: number;
  /** 1-minute load average when the run ended (the machine may be shared). */
  loadAverage1m: number;
}

export interface StormResult {
  deliveries: number;
  handlerRuns: number;
  outcomes: DeliverAllResult["outcomes"];
  correctness: Correctness;
}

export interface Report {
  meta: {
    date: string;
    node: string;
    nproc: number;
    cpuModel: string;
    memoryGiB: number;
    freeMemoryGiB: number;
    dynamodbLocal: string;
    loadAverageStart: number[];
    loadAverageEnd: number[];
    durationS: number;
    options: Omit<BenchOptions, "progress" | "endpoint" | "only">;
    redeliveryDelayMs: number;
  };
  requestsPerEvent: Record<string, RequestCounts>;
  latency: Record<string, LatencyResult>;
  hotKey: Record<string, HotKeyResult>;
  throughput: Record<string, Record<string, ThroughputRun>>;
  /**
   * Raw conditional-write runs per worker count, right before ours, between ours and ours-apply, and right after
   * ours-apply (the ceiling is their mean).
   */
  rawWriteRuns: Record<string, ThroughputRun[]>;
  storm: Record<string, StormResult>;
  /** The Lambda wrapper path on the loopback (bench/wrapper-path.ts); absent in reports before it. */
  wrappers?: WrapperResults;
  /** Latency behind the latency proxy, one run per one-way delay (bench/injected-latency.ts); absent before it. */
  injectedLatency?: InjectedRun[];
  /** The stream path per condition, and its cost per record beside SQS (bench/stream-path.ts); absent before it. */
  streams?: StreamResults;
}

export async function runBench(options: BenchOptions): Promise<Report> {
  const progress = options.progress ?? silentProgress;
  const started = Date.now();
  const loadAverageStart = loadavg().map((l) => round(l));
  const local: DynamoDBLocal | undefined = options.endpoint ? undefined : await startDynamoDBLocal();
  // Interrupted: stop the JVM we started rather than leave it listening.
  const onSignal = (signal: NodeJS.Signals) => {
    void local?.stop().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  if (local) {
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  }
  const endpoint = options.endpoint ?? (local as DynamoDBLocal).endpoint;
  const maxWorkers = Math.max(...options.workers, options.hotKeyWorkers, 16);
  let bc: BenchClient | undefined;
  try {
    bc = createBenchClient(endpoint, maxWorkers * 2, (table) => table.endsWith("-out"));
    return await runAll(bc, endpoint, options, progress, started, loadAverageStart);
  } finally {
    progress.stop();
    bc?.destroy();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await local?.stop();
  }
}

async function runAll(
  bc: BenchClient,
  endpoint: string,
  options: BenchOptions,
  progress: Progress,
  started: number,
  loadAverageStart: number[],
): Promise<Report> {
  let runNo = 0;
  // Table names allow letters, digits, `_`, `.` and `-` only (row names have spaces).
  const prefix = (name: string) =>
    `bench-${started.toString(36)}-${++runNo}-${name.replace(/[^\w.-]+/g, "-")}`;
  const open = (impl: Implementation) => impl.open({ client: bc.client, prefix: prefix(impl.name) });
  const cpu = cpuMeter(endpoint);
  const runs = (s: Scenario) => !options.only || options.only.includes(s);
  await warmUp(bc, open, options, progress);
  const requestsPerEvent = runs("requests") ? await measureRequests(bc, open, progress) : {};
  const latency = runs("latency") ? await measureLatency(open, options, progress) : {};
  const hotKey = runs("hotkey") ? await measureHotKey(bc, open, options, progress) : {};
  const { throughput, rawWriteRuns } = runs("throughput")
    ? await measureThroughput(bc, open, cpu, options, progress)
    : { throughput: {}, rawWriteRuns: {} };
  const storm = runs("storm") ? await measureStorm(bc, open, options, progress) : {};
  const { wrappers, injectedLatency } = await measureLambdaPath(
    bc,
    endpoint,
    options,
    progress,
    prefix,
    runs,
  );
  const streams = runs("streams")
    ? await measureStreams(
        bc,
        endpoint,
        (client, impl) => impl.open({ client: client.client, prefix: prefix(impl.name) }),
        {
          batch: options.streamBatch,
          subjects: options.streamSubjects,
          batches: options.streamBatches,
          reps: options.streamReps,
          oneWayMs: options.injectedOneWayMs,
          jitterMs: options.jitterMs,
          maxSockets: 32,
        },
        progress,
      )
    : undefined;
  progress.stop();
  const { progress: _p, endpoint: _e, only: _o, ...rest } = options;
  return {
    meta: {
      date: new Date().toISOString(),
      node: process.version,
      nproc: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      memoryGiB: round(totalmem() / 2 ** 30, 1),
      freeMemoryGiB: round(freemem() / 2 ** 30, 1),
      dynamodbLocal: dynamoDBLocalVersion(),
      loadAverageStart,
      loadAverageEnd: loadavg().map((l) => round(l)),
      durationS: round((Date.now() - started) / 1000, 1),
      options: rest,
      redeliveryDelayMs: REDELIVERY_DELAY_MS,
    },
    requestsPerEvent,
    latency,
    hotKey,
    throughput,
    rawWriteRuns,
    storm,
    ...(wrappers ? { wrappers } : {}),
    ...(injectedLatency ? { injectedLatency } : {}),
    ...(streams ? { streams } : {}),
  };
}

/** (6) The wrapper path on the loopback, and (7) every path at injected latencies (with the wrapper path again). */
async function measureLambdaPath(
  bc: BenchClient,
  endpoint: string,
  options: BenchOptions,
  progress: Progress,
  prefix: (name: string) => string,
  runs: (s: Scenario) => boolean,
): Promise<{ wrappers?: WrapperResults; injectedLatency?: InjectedRun[] }> {
  const wrappers = runs("wrappers")
    ? await measureWrapperPath(
        bc,
        (impl) => impl.open({ client: bc.client, prefix: prefix(impl.name) }),
        { invocations: options.wrapperInvocations, reps: options.wrapperReps, tag: "loopback" },
        progress,
      )
    : undefined;
  const injectedLatency = runs("injected")
    ? await measureInjectedLatency(
        endpoint,
        INJECTED,
        (client, impl) => impl.open({ client: client.client, prefix: prefix(impl.name) }),
        {
          oneWayMs: options.injectedOneWayMs,
          jitterMs: options.jitterMs,
          events: options.injectedEvents,
          reps: options.injectedReps,
          warmup: Math.min(5, Math.ceil(options.injectedEvents / 10)),
          wrapperInvocations: options.wrapperInvocations,
          wrapperReps: options.wrapperReps,
          maxSockets: 32,
        },
        progress,
      )
    : undefined;
  return { wrappers, injectedLatency };
}

type Open = (impl: Implementation) => Promise<Instance>;

async function run(
  instance: Instance,
  deliveries: PlannedDelivery[],
  workers: number,
  progress: Progress,
  redeliveryDelayMs = REDELIVERY_DELAY_MS,
): Promise<DeliverAllResult> {
  return deliverAll(instance, deliveries, {
    workers,
    redeliveryDelayMs,
    maxDeliveries: MAX_DELIVERIES,
    onDelivered: () => progress.tick(),
  });
}

const once = (event: BenchEvent, plan: HandlerPlan = { workMs: 0 }): PlannedDelivery => ({
  event,
  plans: [plan],
});

/** DynamoDB Local's JIT (and Node's) must be warm for every request type before anything is timed. */
async function warmUp(bc: BenchClient, open: Open, options: BenchOptions, progress: Progress): Promise<void> {
  const impls = [...THROUGHPUT, OURS_PUT, unguarded, rawWrite];
  progress.phase("warm-up", impls.length * options.warmupEvents);
  for (const impl of impls) {
    const instance = await open(impl);
    const events = Array.from({ length: options.warmupEvents }, (_, i) => once(makeEvent(`warm-${i}`, 1)));
    await run(instance, events, 4, progress);
    await instance.close();
  }
  bc.writes.clear();
}

/** (1) Requests per event, sequentially, one event at a time: new, duplicate, stale, failed. */
async function measureRequests(
  bc: BenchClient,
  open: Open,
  progress: Progress,
): Promise<Record<string, RequestCounts>> {
  const out: Record<string, RequestCounts> = {};
  progress.phase("requests per event", REQUESTS.length * REQUEST_SAMPLES * 4);
  for (const impl of REQUESTS) {
    const instance = await open(impl);
    out[impl.name] = await countRequests(bc, instance, progress);
    await instance.close();
  }
  return out;
}

const REQUEST_SAMPLES = 3;

/** One implementation's requests and capacity per event of each kind, and the output table checked afterwards. */
async function countRequests(
  bc: BenchClient,
  instance: Instance,
  progress: Progress,
): Promise<RequestCounts> {
  const samples = REQUEST_SAMPLES;
  // Not counted: the first request of each kind on a fresh table.
  for (let i = 0; i < 3; i++) await instance.deliver(makeEvent(`req-warm-${i}`, 1), { workMs: 0 });
  const totals = { new: 0, duplicate: 0, stale: 0, failed: 0 };
  const breakdown = { new: {}, duplicate: {}, stale: {}, failed: {} };
  const zero = (): Capacity => ({ wcu: 0, rcu: 0, estimatedWcu: 0 });
  const capacity = { new: zero(), duplicate: zero(), stale: zero(), failed: zero() };
  const newByRole = new Map<string, number>();
  const expected = new Map<string, string>();
  const count = async (kind: keyof typeof totals, event: BenchEvent, plan: HandlerPlan, sample: number) => {
    bc.requests.reset();
    bc.capacity.reset();
    try {
      await instance.deliver(event, plan);
    } catch {
      // The planned failure: the invocation fails; its requests are what we count.
    }
    totals[kind] += bc.requests.total();
    capacity[kind].wcu += bc.capacity.wcu;
    capacity[kind].rcu += bc.capacity.rcu;
    capacity[kind].estimatedWcu += bc.capacity.estimatedWcu;
    if (kind === "new")
      for (const [role, wcu] of Object.entries(bc.capacity.wcuByRole()))
        newByRole.set(role, (newByRole.get(role) ?? 0) + wcu);
    if (sample === 0) breakdown[kind] = { ...bc.requests.counts };
    progress.tick();
  };
  for (let s = 0; s < samples; s++) {
    const v2 = makeEvent(`req-${s}`, 2);
    await count("new", v2, { workMs: 0 }, s);
    await count("duplicate", v2, { workMs: 0 }, s);
    await count("stale", makeEvent(`req-${s}`, 1), { workMs: 0 }, s);
    await count("failed", makeEvent(`req-fail-${s}`, 1), { workMs: 0, fail: "before-effect" }, s);
    expected.set(v2.subject, v2.position);
  }
  for (let i = 0; i < 3; i++)
    expected.set(makeEvent(`req-warm-${i}`, 1).subject, makeEvent(`req-warm-${i}`, 1).position);
  const correctness = await checkOutput(bc.client, bc.writes, instance.outputTable, expected);
  return {
    new: round(totals.new / samples),
    duplicate: round(totals.duplicate / samples),
    stale: round(totals.stale / samples),
    failed: round(totals.failed / samples),
    breakdown,
    capacity: perSample(capacity, samples),
    newWcuByRole: Object.fromEntries([...newByRole].map(([role, wcu]) => [role, round(wcu / samples)])),
    correctness,
  };
}

/** Capacity sums over the samples → per event. */
function perSample(capacity: Record<string, Capacity>, samples: number): RequestCounts["capacity"] {
  return Object.fromEntries(
    Object.entries(capacity).map(([k, c]) => [
      k,
      {
        wcu: round(c.wcu / samples),
        rcu: round(c.rcu / samples),
        estimatedWcu: round(c.estimatedWcu / samples),
      },
    ]),
  ) as RequestCounts["capacity"];
}

/**
 * (2) Latency of a new event, sequential, every implementation interleaved event by event (so drift in the
 * machine's load hits all alike), against the unguarded handler doing the same effect, per repetition.
 */
async function measureLatency(
  open: Open,
  options: BenchOptions,
  progress: Progress,
): Promise<Record<string, LatencyResult>> {
  const warmup = 20;
  const perRep = new Map<string, { p50: number[]; p99: number[]; r50: number[]; r99: number[] }>();
  progress.phase("latency", options.reps * LATENCY.length * (options.latencyEvents + warmup));
  for (let rep = 0; rep < options.reps; rep++) {
    const instances = await Promise.all(LATENCY.map((impl) => open(impl)));
    const samples = LATENCY.map(() => [] as number[]);
    for (let i = 0; i < warmup + options.latencyEvents; i++) {
      const event = makeEvent(`lat-${rep}-${i}`, 1);
      // Rotate the order so that no implementation always runs right after another.
      for (let j = 0; j < instances.length; j++) {
        const k = (i + j) % instances.length;
        const t0 = performance.now();
        await instances[k]?.deliver(event, { workMs: 0 });
        if (i >= warmup) samples[k]?.push(performance.now() - t0);
        progress.tick();
      }
    }
    const base = { p50: percentile(samples[0] ?? [], 50), p99: percentile(samples[0] ?? [], 99) };
    LATENCY.forEach((impl, k) => {
      const s = samples[k] ?? [];
      const p50 = percentile(s, 50);
      const p99 = percentile(s, 99);
      const entry = perRep.get(impl.name) ?? { p50: [], p99: [], r50: [], r99: [] };
      entry.p50.push(p50);
      entry.p99.push(p99);
      entry.r50.push(p50 / base.p50);
      entry.r99.push(p99 / base.p99);
      perRep.set(impl.name, entry);
    });
    for (const instance of instances) await instance.close();
  }
  const out: Record<string, LatencyResult> = {};
  for (const [name, e] of perRep) {
    out[name] = {
      p50Ms: roundSpread(spread(e.p50), 3),
      p99Ms: roundSpread(spread(e.p99), 3),
      ratioP50: roundSpread(spread(e.r50), 3),
      ratioP99: roundSpread(spread(e.r99), 3),
    };
  }
  return out;
}

/** (3) Hot key: every version of one object key delivered at once, in a shuffled order, to concurrent workers. */
async function measureHotKey(
  bc: BenchClient,
  open: Open,
  options: BenchOptions,
  progress: Progress,
): Promise<Record<string, HotKeyResult>> {
  const out: Record<string, HotKeyResult> = {};
  const newest = options.hotKeyVersions;
  // The same order and the same handler durations (10–50 ms) for every implementation.
  const random = rng(options.seed);
  const workMs = new Map<number, number>();
  for (let v = 1; v <= newest; v++) workMs.set(v, 10 + Math.floor(random() * 40));
  const order = shuffle(
    Array.from({ length: newest }, (_, i) => i + 1),
    random,
  );
  for (const impl of HOT_KEY) {
    progress.phase(`hot key: ${impl.name}`, newest);
    const instance = await open(impl);
    const deliveries = order.map((v) =>
      once(makeEvent("hot/object.jpg", v), { workMs: workMs.get(v) ?? 10 }),
    );
    bc.capacity.reset();
    const result = await run(instance, deliveries, options.hotKeyWorkers, progress);
    const wcuPerVersionByRole = Object.fromEntries(
      Object.entries(bc.capacity.wcuByRole()).map(([role, wcu]) => [role, round(wcu / newest)]),
    );
    const newestEvent = makeEvent("hot/object.jpg", newest);
    const correctness = await checkOutput(
      bc.client,
      bc.writes,
      instance.outputTable,
      new Map([[newestEvent.subject, newestEvent.position]]),
    );
    let staleRuns = 0;
    for (const [v, n] of instance.stats.runsByVersion) if (v < newest) staleRuns += n;
    const finalPos = correctness.finalPositions.get(newestEvent.subject);
    out[impl.name] = {
      handlerRuns: instance.stats.handlerRuns,
      staleRuns,
      waitMs: Math.round(instance.stats.waitMs + result.redeliveryWaitMs),
      redeliveries: result.redeliveries,
      elapsedMs: Math.round(result.elapsedMs),
      finalVersion: finalPos ? versionOf(finalPos) : undefined,
      correct: correctness.ok,
      correctness,
      outcomes: result.outcomes,
      wcuPerVersionByRole,
    };
    await instance.close();
  }
  return out;
}

/** (4) Throughput over distinct keys, and the raw conditional-write rate before and after each block. */
async function measureThroughput(
  bc: BenchClient,
  open: Open,
  cpu: CpuMeter,
  options: BenchOptions,
  progress: Progress,
): Promise<{
  throughput: Record<string, Record<string, ThroughputRun>>;
  rawWriteRuns: Record<string, ThroughputRun[]>;
}> {
  const throughput: Record<string, Record<string, ThroughputRun>> = {};
  const rawWriteRuns: Record<string, ThroughputRun[]> = {};
  const measure = async (impl: Implementation, workers: number): Promise<ThroughputRun> => {
    progress.phase(`throughput: ${impl.name} × ${workers}`, options.events);
    const instance = await open(impl);
    const events = Array.from({ length: options.events }, (_, i) => makeEvent(`tp-${i}`, 1));
    bc.requests.reset();
    bc.capacity.reset();
    cpu.start();
    const result = await run(
      instance,
      events.map((e) => once(e)),
      workers,
      progress,
    );
    const used = cpu.read();
    const requests = bc.requests.total();
    const { wcu, rcu } = bc.capacity;
    const correctness = await checkOutput(
      bc.client,
      bc.writes,
      instance.outputTable,
      new Map(events.map((e) => [e.subject, e.position])),
    );
    await instance.close();
    bc.writes.clear(instance.outputTable);
    return {
      eventsPerSecond: Math.round(options.events / (result.elapsedMs / 1000)),
      requestsPerEvent: round(requests / options.events),
      wcuPerEvent: round(wcu / options.events),
      rcuPerEvent: round(rcu / options.events),
      clientCpuMsPerEvent: round(used.clientMs / options.events, 3),
      serverCpuMsPerEvent: used.serverMs === undefined ? undefined : round(used.serverMs / options.events, 3),
      elapsedMs: Math.round(result.elapsedMs),
      correctness,
      errors: result.outcomes.error ?? 0,
      loadAverage1m: round(loadavg()[0] ?? 0),
    };
  };
  for (const workers of options.workers) {
    // The ceiling is measured right before ours, between ours and ours-apply, right after ours-apply and after inline, so
    // that the ratios the target is about compare runs seconds apart on a machine whose load may drift.
    const raw = [await measure(rawWrite, workers)];
    for (const impl of THROUGHPUT) {
      const runs = throughput[impl.name] ?? {};
      throughput[impl.name] = runs;
      runs[String(workers)] = await measure(impl, workers);
      if (impl === OURS || impl === OURS_APPLY || impl === INLINE) raw.push(await measure(rawWrite, workers));
    }
    rawWriteRuns[String(workers)] = raw;
  }
  return { throughput, rawWriteRuns };
}

/**
 * (5) Correctness storm: per key the newest version delivered twice and an older one once, all shuffled, to
 * 16 workers; one event in ten fails after its effect on the first attempt (and is redelivered).
 */
async function measureStorm(
  bc: BenchClient,
  open: Open,
  options: BenchOptions,
  progress: Progress,
): Promise<Record<string, StormResult>> {
  const random = rng(options.seed + 1);
  const deliveries: PlannedDelivery[] = [];
  const expected = new Map<string, string>();
  for (let k = 0; k < options.stormKeys; k++) {
    const v1 = makeEvent(`storm-${k}`, 1);
    const v2 = makeEvent(`storm-${k}`, 2);
    expected.set(v2.subject, v2.position);
    // A failing event fails on the first attempt of every copy (so its first run always fails); key 0's
    // newest always does, so that every run exercises a failure after the effect.
    const fails = new Map([
      [v1, random() < 0.1],
      [v2, k === 0 || random() < 0.1],
    ]);
    for (const event of [v2, v2, v1]) {
      const workMs = Math.floor(random() * 5);
      const first: HandlerPlan = fails.get(event) ? { workMs, fail: "after-effect" } : { workMs };
      deliveries.push({ event, plans: [first, { workMs }] });
    }
  }
  const order = shuffle(deliveries, random);
  const out: Record<string, StormResult> = {};
  for (const impl of STORM) {
    progress.phase(`correctness storm: ${impl.name}`, order.length);
    const instance = await open(impl);
    const result = await run(instance, order, 16, progress, 50);
    out[impl.name] = {
      deliveries: order.length,
      handlerRuns: instance.stats.handlerRuns,
      outcomes: result.outcomes,
      correctness: await checkOutput(bc.client, bc.writes, instance.outputTable, expected),
    };
    await instance.close();
  }
  return out;
}

function versionOf(position: string): number | undefined {
  // Positions are normalized sequencers: base + version, right-padded to 32 hex digits.
  const hex = position.slice(0, 16);
  return hex ? Number(BigInt(`0x${hex}`) - BigInt(`0x${makeEvent("x", 0).sequencer}`)) : undefined;
}

function roundSpread(s: Spread, digits: number): Spread {
  return { median: round(s.median, digits), min: round(s.min, digits), max: round(s.max, digits) };
}
