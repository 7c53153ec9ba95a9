import type { Clock } from "../core/clock.js";
import type { StateRecord } from "../core/state.js";
import type { AtomicWrite, StateStore } from "../core/store.js";

import type { StepEffects } from "../durable/step-effects.js";
import type { Outbox, OutboxReader } from "../outbox/types.js";
import type { TaggedWrite } from "./faulty-store.js";

/** A row of the fenced sink: the position and fence of the write that landed last. */
export interface SinkRow {
  pos: string;
  fence: number;
}

/** What an effect is written for: the event (its counter and subject) and the claim (its fence and state key). */
export interface EffectTarget {
  counterId: string;
  subject: string;
  identity: string;
  /** The event's own (the guard's context says it too): inline state keeps effects in this key's row. */
  key: string;
}

/**
 * One history's stores and effect targets: the shared state store (before fault decoration), the per-identity
 * counter the folded effect increments, and the fenced sink row per subject. Names are the history's own (DynamoDB
 * histories share tables, so their subjects carry a namespace).
 */
export interface Backend {
  /** The engine's name (src/engines/registry.ts). */
  readonly name: string;
  readonly store: StateStore;
  /** The sink reports its own landed writes to `onSinkLanded` (memory); else the fault store reports them. */
  readonly sinkReportsItself: boolean;
  /** Folded into a commit: adds 1 to the counter of `e` and records the fence that did. */
  counter(e: EffectTarget, fence: number): AtomicWrite;
  /** Folded into a commit: the sink row of `e.subject` takes (pos, fence) unless it holds newer. */
  sinkAtomic(e: EffectTarget, pos: string, fence: number): TaggedWrite;
  /** The same write, in its own request, while the claim of `fence` holds. */
  sinkPut(e: EffectTarget, pos: string, fence: number): Promise<"applied" | "stale">;
  readCounter(e: EffectTarget): Promise<{ count: number; fences: number[] }>;
  readSink(subject: string): Promise<SinkRow | undefined>;
  /** The state item and its stored size (memory: JSON bytes; DynamoDB: item bytes). */
  readState(key: string): Promise<{ state: StateRecord | undefined; bytes: number | undefined }>;
  /** Deletes a state item, as TTL does. */
  forget(key: string): Promise<void>;
  /**
   * SQL servers: `workers` cold starts at once beside live traffic, each with a pool of its own (as Lambda instances
   * have), each running the engine's migration of the live table (nothing missing: it must take no lock) and then of
   * one fresh table (a first deploy: they race to create it). Rejects with what a migration threw.
   */
  coldStart?(workers: number): Promise<void>;
  /**
   * SQL servers: a long reader (a report, pg_dump, a session idle in transaction): a transaction that has read the
   * live table and holds its lock until the function returned is called, or `ms` (real) have passed.
   */
  holdReader?(ms: number): Promise<() => Promise<void>>;
  /**
   * Servers that acknowledge a write before their replicas have it (engines whose `serverFaults` say so, when the
   * run asks for `failover`):
   * called after every step, everything quiescent. The server may have failed over to a replica that lacks the
   * last writes; returns the faults since the last call, for the run's counts and the trace.
   */
  serverFaults?(): Promise<ServerFault[]>;
  /**
   * Durable histories (src/sim/durable-history.ts): the engine's guarded steps on this backend's database, on
   * `clock` (fences, marker times, randomness), whose atomic request takes `counter` and `sinkAtomic` writes and whose
   * fence move `store` folds. Quiet: no logs, no metrics.
   */
  stepEffects?(clock: Clock): StepEffects;
  /** Engines whose writes can meet a value someone else wrote in their target: src/sim/foreign-values.ts. */
  readonly foreign?: ForeignTargets;
  /**
   * Outbox histories (`--outbox`, src/sim/outbox-history.ts): the engine's outbox for this history, holding no other
   * history's entries (histories on a server run at once, and a relay claims every subject's head), whose store
   * folds its entries; `clock` is the history's (virtual) clock. Called once per history.
   */
  outbox?(clock: Clock): Promise<SimOutbox>;
}

/** An engine's outbox in one history: the writer the guard folds into commits, and a reader per relay copy. */
export interface SimOutbox {
  readonly outbox: Outbox;
  /** A reader for one relay copy (its own connection where the engine has them). */
  reader(): Promise<OutboxReader>;
}

/** A value someone else wrote in an effect target before the history (a counter written as `"007"`). */
export interface ForeignKind {
  readonly name: string;
  /** The engine refuses a write over it: every commit that folds one is refused whole, and nothing of it lands. */
  readonly refused: boolean;
}

/** Effect targets another writer may have written first, and the writes a commit folds to them. */
export interface ForeignTargets {
  readonly kinds: readonly ForeignKind[];
  /** Before the history: writes a value of `kind` in the foreign target of `e`. */
  plant(e: EffectTarget, kind: string): Promise<void>;
  /** Folded into each commit of `e`, after its counter: its writes to the foreign target. */
  writes(e: EffectTarget, kind: string): AtomicWrite[];
  /** After the history: what is wrong with the target after `commits` commits of `e`; undefined when exact. */
  check(e: EffectTarget, kind: string, commits: number): Promise<string | undefined>;
}

/** A fault of the server itself (`Backend.serverFaults`). */
export interface ServerFault {
  kind: "failover" | "wait-timeout";
  /** A line for the trace. */
  detail: string;
}

/**
 * A counter write of `engine`, described for traces and write outcomes. Not fenced: a second application must show
 * as a count of 2.
 */
export function counterWrite<E extends string, B extends object>(
  engine: E,
  e: EffectTarget,
  fence: number,
  body: B,
): { engine: E; description: string } & B {
  return { engine, description: `count ${e.counterId} f${fence}`, ...body };
}

/** The description of a sink write. */
export function sinkDescription(e: EffectTarget, pos: string, fence: number): string {
  return `sink ${e.subject} ${pos} f${fence}`;
}

/** `sinkAtomic` from an engine's fenced sink write: described and tagged, so the fault store reports it landing. */
export function taggedSink<W extends AtomicWrite>(
  write: (e: EffectTarget, pos: string, fence: number) => W,
): (e: EffectTarget, pos: string, fence: number) => W & TaggedWrite {
  return (e, pos, fence) => ({
    ...write(e, pos, fence),
    description: sinkDescription(e, pos, fence),
    chaos: { subject: e.subject, pos, fence },
  });
}
