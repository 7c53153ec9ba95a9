import { randomUUID } from "node:crypto";
import type { SimEnv } from "../engines/engine.js";
import { type EngineName, engine } from "../engines/registry.js";
import type { OutboxBreak } from "./broken.js";
import { randomChooser } from "./chooser.js";
import { type Profile, randomConfig } from "./config.js";
import { runDurableHistory } from "./durable-history.js";
import { addCounts, type FaultCounts } from "./faults.js";
import { type HistoryDeps, type HistoryResult, runHistory, type StoreWrapper } from "./history.js";
import type { HistoryConfig } from "./history-config.js";
import type { KnownIssue } from "./known-issues.js";
import type { InvariantId, Violation } from "./observer.js";
import { outboxSettings } from "./outbox-config.js";
import { runOutboxHistory } from "./outbox-history.js";
import { streamSettings } from "./stream-config.js";
import { runStreamHistory } from "./stream-history.js";
import { wrapperSettings } from "./wrapper-config.js";
import { runWrapperHistory } from "./wrapper-history.js";

export interface CampaignOptions {
  histories: number;
  seed: number;
  /** The engine (src/engines/registry.ts), in its inline mode with `inline`. */
  engine: EngineName;
  inline?: boolean;
  /** DynamoDB: an endpoint to use; without one, DynamoDB Local is started and stopped here. */
  endpoint?: string;
  /**
   * Histories on a server (DynamoDB, inline, PostgreSQL) run this many at a time, each on its own scheduler and
   * subjects. Default 12.
   */
  concurrency?: number;
  profile?: Profile;
  /** Tests: change the seeded config (e.g. an unsafe guard option). */
  configure?: (cfg: HistoryConfig) => HistoryConfig;
  /** Tests: a deliberately broken store around the real one. */
  wrapStore?: StoreWrapper;
  /** `--break lossy-keys`: hostile names reach the guard lossily encoded (src/sim/hostile-keys.ts). */
  lossyKeys?: boolean;
  /** Tests: a sink that ignores position and fence (memory). */
  unfencedSink?: boolean;
  /** Tests: the inline stores map state keys to rows with this (a broken mapping, BROKEN_ROW_KEYS). */
  rowKey?: (stateKey: string) => string;
  /** Deliver through the Lambda wrappers in SQS batches (wrapper-history.ts) instead of calling the guard. */
  wrappers?: boolean;
  /** Deliver through the Kinesis wrapper from a stream's shards (stream-history.ts) instead of calling the guard. */
  streams?: boolean;
  /** With `streams`: the checkpoint moves past every batch (BROKEN_STREAMS, `--break checkpoint-past-failures`). */
  checkpointPastFailures?: boolean;
  /** Publish at commit through the engine's outbox, relays and a consumer downstream (outbox-history.ts). */
  outbox?: boolean;
  /** With `outbox`: a broken relay or publisher (BROKEN_OUTBOX, `--break relay-mark-before-send`, …). */
  outboxBreak?: OutboxBreak;
  /** A failover to a lagging replica in each history (engines whose `serverFaults` name it, src/engines/engine.ts). */
  failover?: { waitForReplicas: boolean };
  /** Durable histories (src/sim/durable-history.ts) instead of the guard's: dispatcher, executions, guarded steps. */
  durable?: boolean;
  /** With `durable`: steps keyed by name only (BROKEN_STEPS, `--break step-name-markers`). */
  nameKeyedSteps?: boolean;
  /** Tests: the engine's pre-write check weakened (BROKEN_WRITE_CHECKS; engines whose backend has `foreign`). */
  brokenWriteCheck?: boolean;
  onProgress?: (done: number, total: number) => void;
  /**
   * Tests: stop after the history for which this returns true (a broken store caught): the histories after it
   * would only repeat the finding. Histories already running still finish.
   */
  stopWhen?: (summary: CampaignSummary) => boolean;
  /**
   * Aborted (Ctrl-C): no history starts after it, those running finish, and the run's environment is removed as at
   * any end; the summary counts the histories run.
   */
  signal?: AbortSignal;
}

export interface HistoryFailure {
  seed: number;
  violations: Violation[];
  /** Known guard issues whose pattern the history shows (KNOWN_ISSUES in known-issues.ts). */
  knownIssues: KnownIssue[];
}

export interface CampaignSummary {
  histories: number;
  /** Histories with at least one reported violation. */
  violations: number;
  /** Distinct histories (fingerprints of every decision taken). */
  states: number;
  faults: FaultCounts;
  /**
   * Histories whose clocks differed beyond clockSkewMs (only fencing-guaranteed invariants reported), and the
   * violations there that are not reported (the guarantee does not hold beyond the skew bound).
   */
  beyondSkew: number;
  beyondSkewUnreported: number;
  /** Histories with violations per invariant, and per known issue whose pattern they show; `unexplained`: none. */
  byInvariant: Partial<Record<InvariantId, number>>;
  knownIssues: Partial<Record<KnownIssue, number>>;
  unexplained: number;
  failures: HistoryFailure[];
  wallMs: number;
}

/** The seed of history `i` of a run with `seed`: replay it alone with `--replay`. */
export function historySeed(seed: number, i: number): number {
  return seed + i;
}

export interface ReplayResult extends HistoryResult {
  seed: number;
  config: HistoryConfig;
}

/**
 * Stores behind a server (DynamoDB Local, PostgreSQL) run the small profile, several histories at a time, sampled
 * per delivery; in-process ones (memory, SQLite in memory) run the default profile one after another, step by step.
 */
function isServer(o: Pick<CampaignOptions, "engine" | "inline">): boolean {
  return engine(o.engine, o).server;
}

/** A run's environment on its engine (src/engines/engine.ts): tables, a schema, or nothing for in-process engines. */
async function simEnv(o: Pick<CampaignOptions, "engine" | "inline" | "endpoint">): Promise<SimEnv> {
  return engine(o.engine, o).openSimEnv(o.endpoint ? { endpoint: o.endpoint } : {});
}

/**
 * One seeded history on one store (the unit of a run, and `--replay`), in the run's environment `env`; without one,
 * in an environment of its own (opened and closed here).
 */
export async function runSeed(
  seed: number,
  o: Omit<CampaignOptions, "histories" | "seed" | "onProgress"> & { env?: SimEnv; trace?: boolean },
): Promise<ReplayResult & { digest: string }> {
  if (!o.env) {
    const env = await simEnv(o);
    try {
      return await runSeed(seed, { ...o, env });
    } finally {
      await env.close();
    }
  }
  const env = o.env;
  const real = isServer(o);
  const base = randomConfig(seed, o.profile ?? (real ? "small" : "default"));
  const config = o.configure ? o.configure(base) : base;
  const chooser = randomChooser(seed);
  if (o.durable) {
    const result = await runDurableHistory({
      chooser,
      backend: env.backend({ onSinkLanded: () => {} }),
      namespace: `h${seed}-${randomUUID().slice(0, 6)}/`,
      ...(o.nameKeyedSteps ? { nameKeyedSteps: true } : {}),
      trace: o.trace ?? false,
    });
    return { ...result, seed, config, digest: chooser.digest() };
  }
  const deps: HistoryDeps = {
    chooser,
    backend: (onSinkLanded) => {
      const backend = env.backend({
        onSinkLanded,
        ...(o.unfencedSink ? { unfencedSink: true } : {}),
        ...(o.rowKey ? { rowKey: o.rowKey } : {}),
        ...(o.failover ? { failover: { ...o.failover, chooser } } : {}),
        ...(o.brokenWriteCheck ? { brokenWriteCheck: true } : {}),
      });
      if (o.failover && !backend.serverFaults)
        throw new Error(`the ${o.engine} engine has no failover fault`);
      if (o.brokenWriteCheck && !backend.foreign)
        throw new Error(`the ${o.engine} engine has no write check to break`);
      return backend;
    },
    // The wrappers refuse an empty subject (a malformed message): a namespace keeps every name non-empty.
    ...(real
      ? { namespace: `h${seed}-${randomUUID().slice(0, 6)}` }
      : o.wrappers || o.streams
        ? { namespace: "w" }
        : {}),
    ...(o.wrapStore ? { wrapStore: o.wrapStore } : {}),
    ...(o.lossyKeys ? { lossyKeys: true } : {}),
    sampleEvery: real ? "delivery" : "step",
    trace: o.trace ?? false,
  };
  const result = await runKind(seed, config, deps, o);
  return { ...result, seed, config, digest: chooser.digest() };
}

/** The history of the run's kind: through the guard, the SQS wrapper, the Kinesis wrapper, or publishing. */
function runKind(
  seed: number,
  config: HistoryConfig,
  deps: HistoryDeps,
  o: Pick<CampaignOptions, "streams" | "wrappers" | "checkpointPastFailures" | "outbox" | "outboxBreak">,
): Promise<HistoryResult> {
  if (o.outbox) return runOutboxHistory(config, outboxSettings(seed), deps, o.outboxBreak);
  if (o.streams) {
    const broken = { checkpointPastFailures: o.checkpointPastFailures === true };
    return runStreamHistory(config, streamSettings(seed), deps, broken);
  }
  return o.wrappers ? runWrapperHistory(config, wrapperSettings(seed), deps) : runHistory(config, deps);
}

function emptySummary(): CampaignSummary {
  return {
    histories: 0,
    violations: 0,
    states: 0,
    faults: {},
    beyondSkew: 0,
    beyondSkewUnreported: 0,
    byInvariant: {},
    knownIssues: {},
    unexplained: 0,
    failures: [],
    wallMs: 0,
  };
}

/** Runs `histories` seeded histories and sums them up. */
export async function runCampaign(o: CampaignOptions): Promise<CampaignSummary> {
  const started = Date.now();
  const summary = emptySummary();
  const digests = new Set<string>();
  const env = await simEnv(o);
  try {
    const record = (r: ReplayResult & { digest: string }) => {
      summary.histories++;
      digests.add(r.digest);
      addCounts(summary.faults, r.faults);
      if (r.beyondSkew) {
        summary.beyondSkew++;
        summary.beyondSkewUnreported += r.allViolations.length - r.violations.length;
      }
      if (r.violations.length > 0) {
        summary.violations++;
        for (const v of r.violations)
          summary.byInvariant[v.invariant] = (summary.byInvariant[v.invariant] ?? 0) + 1;
        for (const k of r.knownIssues) summary.knownIssues[k] = (summary.knownIssues[k] ?? 0) + 1;
        if (r.knownIssues.length === 0) summary.unexplained++;
        // Every unexplained failure is kept; known ones only while there is room.
        if (r.knownIssues.length === 0 || summary.failures.length < 20)
          summary.failures.push({ seed: r.seed, violations: r.violations, knownIssues: r.knownIssues });
      }
      o.onProgress?.(summary.histories, o.histories);
    };
    const one = (i: number) => runSeed(historySeed(o.seed, i), { ...o, env });
    const more = (i: number) => i < o.histories && !o.stopWhen?.(summary) && !o.signal?.aborted;
    // Durable histories wait on real timers (the dispatcher's back-off) too: several at a time, as on a server.
    if (!isServer(o) && !o.durable) {
      for (let i = 0; more(i); i++) record(await one(i));
    } else {
      // A server's histories mostly wait on requests: several at a time, each under its own namespace.
      let next = 0;
      const lanes = Array.from({ length: Math.max(1, o.concurrency ?? 12) }, async () => {
        while (more(next)) record(await one(next++));
      });
      await Promise.all(lanes);
    }
  } finally {
    await env.close();
  }
  summary.states = digests.size;
  summary.wallMs = Date.now() - started;
  return summary;
}

/** Replays one history with its trace (`--replay`). */
export async function replay(
  seed: number,
  o: Omit<CampaignOptions, "histories" | "seed" | "onProgress">,
): Promise<ReplayResult> {
  const env = await simEnv(o);
  try {
    return await runSeed(seed, { ...o, env, trace: true });
  } finally {
    await env.close();
  }
}
