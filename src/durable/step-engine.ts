import type { AtomicWrite, WriteOutcome } from "../core/store.js";
import type { DispatchedExecution } from "./payload.js";
import type { FenceHolder, StepRef } from "./step-keys.js";

/** One guarded step's atomic request: the fence move, the marker and the writes (src/durable/step-keys.ts). */
export interface StepCommit<W extends AtomicWrite> {
  execution: DispatchedExecution;
  stepName: string;
  /** The step's marker key (`markerKey` of step-keys.ts, or the engine's own). */
  markerKey: string;
  /** This application's fence (the clock's): kept in the marker, so a lost answer is recognised as our own. */
  fence: number;
  /** The step's result as JSON (undefined for `undefined`). */
  result: string | undefined;
  nowMs: number;
  /** When the marker may go (seconds since the epoch): a TTL where the engine has one, a column otherwise. */
  expiresAtSeconds: number;
  writes: readonly W[];
}

/**
 * How the request ended: everything landed (with each write's outcome, refused ones dropped as their `refused`
 * setting says), the marker was there (the step was applied: by an earlier run, or by this very attempt when the
 * marker's fence is ours), or the fence refused it (a newer or stopped execution holds it): nothing written.
 */
export type StepCommitAnswer =
  | { kind: "landed"; writes: WriteOutcome[] }
  | { kind: "marker"; fence: number | null; result: string | undefined }
  | { kind: "fence"; holder: FenceHolder };

/**
 * An engine's part of guarded steps (`src/engines/<engine>/step-effects.ts`): the effects, the marker and the
 * fence in one atomic request of that engine (a transaction, a script), and the
 * fence move as a write the dispatcher's commit folds. `StepEffects` does the rest, the same on every engine.
 */
export interface StepEffectsEngine<W extends AtomicWrite> {
  /** The class name, for errors. */
  readonly what: string;
  /** The engine's name in errors: its `Engine.displayName` ("DynamoDB"). */
  readonly displayName: string;
  /** Whether `write` is one of this engine's. */
  isWrite(write: AtomicWrite): write is W;
  /** Throws an `UnsupportedAtomicWriteError` for a write of the engine this one cannot fold (another server, file). */
  checkWrite?(write: W): void;
  /**
   * The marker key where the engine keys it otherwise than `markerKey` of step-keys.ts (a prefix, a hash tag); an
   * `OptionsError` for a step it cannot key (thrown outside the step).
   */
  markerKey?(execution: DispatchedExecution, step: StepRef): string;
  /** The most writes a step may fold (a `TransactionLimitError` above it): the engine's `limits.maxWritesPerCommit`. */
  readonly maxWrites: number;
  /**
   * The largest result a step may return (UTF-8 bytes of JSON; a `ResultSerializationError` above it): what the
   * engine's marker holds, its `limits.maxResultBytes`.
   */
  readonly maxResultBytes: number;
  /** One atomic request; store failures throw `StoreError`s. */
  commit(step: StepCommit<W>): Promise<StepCommitAnswer>;
  /** Marks the fence stopped for `execution`: `stale` when a newer execution holds it. One request. */
  stop(execution: DispatchedExecution): Promise<"stopped" | "stale">;
  /**
   * Checks, with one read, that what the commits need is there (a table), else throws a `StepEffectsNotReadyError`
   * naming the call that creates it. Engines whose commits need nothing created beforehand have none.
   */
  ready?(): Promise<void>;
  /** The fence move as a write a store of this engine folds into its commit. */
  fenceWrite(execution: DispatchedExecution): AtomicWrite;
  /** A consistent read of the marker `key`: undefined when absent, else its stored result (JSON, if any). */
  readMarker(key: string): Promise<{ result: string | undefined } | undefined>;
}
