import type { AtomicWrite, StateStore } from "../../../src/core/store.js";
import type { StepEffectContext, StepEffects } from "../../../src/durable/index.js";

/**
 * One engine's guarded steps under the contract of test/durable/engines/contract.test.ts: its `StepEffects`, a guard
 * store on the same database (which folds the dispatcher's fence move), and two kinds of effect to count from the sink.
 * One file per engine beside this one (dynamodb.ts, postgres.ts, sqlite.ts, valkey.ts), listed in engines.ts.
 */
export interface StepEngineUnderTest {
  /** The engine's name in EONCE_STORES (src/engines/registry.ts). */
  name: string;
  /** Fresh tables (or key prefix) for one suite. */
  open(): Promise<StepEngineEnv>;
}

export interface StepEngineEnv {
  effects: StepEffects;
  /** A guard store of the engine on the same database, for the dispatcher (`stepEffects` folds into its commit). */
  store: StateStore;
  /** An unfenced write adding 1 to counter `row` of the step's subject (in the subject's slot where that matters). */
  increment(ctx: StepEffectContext, row: string): AtomicWrite;
  /** Counter `row` of `subject` (0 when absent), read from the sink. */
  count(subject: string, row: string): Promise<number>;
  /** The engine's fenced sink put of `value` to row `row` of the step's subject (the step's context is the fence). */
  fencedPut(ctx: StepEffectContext, row: string, value: string): AtomicWrite;
  /** The fenced row's value, read from the sink. */
  value(subject: string, row: string): Promise<string | undefined>;
  /** A write of another engine, which this engine's steps refuse. */
  foreignWrite(): AtomicWrite;
  /** Requests sent to the engine so far, where the engine's client counts them. */
  requests?(): number;
  close(): Promise<void>;
}
