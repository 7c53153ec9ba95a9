import { clockFence } from "../core/acquire.js";
import { type Clock, systemClock } from "../core/clock.js";
import { type EffectKeyScope, effectKey } from "../core/effect-key.js";
import { OptionsError, TransactionLimitError, UnsupportedAtomicWriteError } from "../core/errors.js";
import { OUTCOMES } from "../core/outcomes.js";
import type { Position } from "../core/position.js";
import { parseResult } from "../core/result.js";
import type { AtomicWrite, WriteOutcome } from "../core/store.js";
import { Observer } from "../observe/observer.js";
import { type DispatchedExecution, type DispatchedPayload, dispatchedExecution } from "./payload.js";
import type { StepEffectsEngine } from "./step-engine.js";
import {
  type FenceHolder,
  markerKey,
  markerStep,
  positionOf,
  type StepIdentity,
  type StepRef,
  stepNameOf,
} from "./step-keys.js";
import type { StepEffectsCommonOptions } from "./step-options.js";
import { serializeStepResult } from "./step-result.js";

/** What a guarded step's function gets: the execution, a fence for its sink writes, and `atCommit`. */
export interface StepEffectContext<W extends AtomicWrite = AtomicWrite> {
  executionName: string;
  stepName: string;
  /** The durable SDK's operation id of the step (`step`, or `commitStep` given a `StepIdentity`); none for a key. */
  stepId: string | undefined;
  subject: string;
  identity: string;
  /** The event's position (a `FenceSource` with `fence`: `sink.atomicPut(ctx, item)` takes this context). */
  position: Position | undefined;
  /** This application's fence, from the clock: between two steps of one execution writing one sink row, the later wins. */
  fence: number;
  /** Adds a write of the engine to the step's atomic request: it lands with the marker, or not at all. */
  atCommit(write: W): void;
  /**
   * The idempotency key of this step's effect `name` (an API call's `Idempotency-Key`): of the execution, the step's
   * operation id (or key) and name only, so the same on every retry and replay of the step, another for another
   * step, execution or name (src/core/effect-key.ts; docs/effects.md).
   */
  effectKey(name: string): string;
}

/**
 * How a guarded step ended (statuses of `src/core/outcomes.ts`): `processed` (its effects and marker landed now),
 * `duplicate` (the step was applied before: its stored result) or `stale` (a newer execution of the subject holds
 * the fence, or this one was stopped: nothing was written).
 */
export type StepEffectOutcome<R> =
  | { status: "processed"; result: R; writes: WriteOutcome[] }
  | { status: "duplicate"; result: R }
  | { status: "stale"; current: FenceHolder };

/**
 * A durable step's configuration (`StepConfig` of `@aws/durable-execution-sdk-js`: retry strategy, semantics, serdes),
 * passed to the SDK's `step` as given. Not the SDK's type by name: this module's declarations are reached from the
 * root entry and every engine's (their step effects), which must type-check without the optional SDK installed.
 */
export type DurableStepConfig = object;

/** A durable context as far as `step` needs it (`DurableContext` of `@aws/durable-execution-sdk-js`). */
export interface StepHost {
  /** Runs `fn` as a durable step named `name`: checkpointed, retried by `config.retryStrategy`, replayed after. */
  step<T>(name: string, fn: () => Promise<T>, config?: DurableStepConfig): PromiseLike<T>;
}

/**
 * The identity the durable SDK gives the next operation of `context`: its name and operation id (the context's
 * `peekStepId`, the id its next `step` takes; hierarchical inside child contexts and map items). Call it right
 * before `context.step(name, …)`, to pass to `commitStep` inside that step. An `OptionsError` for a context that
 * gives no step ids (not the SDK's `DurableContext`): a step keyed by its name alone would take a second step of that
 * name for a rerun of the first, and skip it.
 */
export function nextStepIdentity(context: StepHost, name: string): StepIdentity {
  const peek = (context as { peekStepId?: unknown }).peekStepId;
  if (typeof peek !== "function") {
    throw new OptionsError(
      "the durable context gives no step ids (peekStepId of @aws/durable-execution-sdk-js): pass the SDK's DurableContext",
    );
  }
  const id: unknown = peek.call(context);
  if (typeof id !== "string") throw new OptionsError(`the durable context gave step id ${String(id)}`);
  return { name, id };
}

/** Which execution: the payload the dispatcher sent, or the execution it names. */
export type ExecutionRef = DispatchedPayload | DispatchedExecution;

/**
 * Step effects that land once, on any engine: each guarded step's writes commit in one atomic request of the engine
 * with the step's marker (keyed by execution and the step's SDK identity) and the subject's execution fence. A step that runs again
 * (a crash after its effects and before the durable SDK's checkpoint, a retry, a second execution of the event) finds
 * its marker and gets its stored result; a step of an execution superseded by a newer position, or stopped, is
 * refused (`stale`). One request per guarded step. Made by an engine (its `step-effects.ts`, exported by
 * `effectively-once/durable`).
 */
export class StepEffects<W extends AtomicWrite = AtomicWrite> {
  readonly #engine: StepEffectsEngine<W>;
  readonly #markerSeconds: number;
  readonly #observer: Observer;
  readonly #clock: Clock;
  #ready: Promise<void> | undefined;

  protected constructor(
    engine: StepEffectsEngine<W>,
    options: StepEffectsCommonOptions & { markerExpiresAfterSeconds: number },
  ) {
    this.#engine = engine;
    this.#markerSeconds = options.markerExpiresAfterSeconds;
    this.#clock = options.clock ?? systemClock;
    this.#observer = new Observer({
      logger: options.logger,
      metrics: options.metrics,
      pipeline: options.pipeline,
    });
  }

  /**
   * `context.step(stepName, …)` around `commitStep`, keyed by the step's SDK identity (`nextStepIdentity`): two steps of
   * one name in an execution (a `charge` per order line) are two steps, each applied once. The durable SDK
   * checkpoints the outcome, and a replay returns it without running anything.
   */
  step<R>(
    context: StepHost,
    stepName: string,
    execution: ExecutionRef,
    fn: (ctx: StepEffectContext<W>) => R | Promise<R>,
    config?: DurableStepConfig,
  ): PromiseLike<StepEffectOutcome<R>> {
    const exec = executionOf(execution);
    const step = nextStepIdentity(context, stepName);
    this.#markerKey(exec, step); // a bad step name throws here, outside the step's retries
    return context.step(stepName, () => this.commitStep(exec, step, fn), config);
  }

  /**
   * Inside `context.step`: runs `fn` (which computes the step's writes with `ctx.atCommit` and its result; it runs
   * again whenever the step does, so any other effect of it must be safe to repeat), then one atomic request writes
   * the fence, the marker and the writes. Store failures throw (`StoreError`), for the step's retry strategy.
   * `step` is the step's SDK identity (`nextStepIdentity(context, name)` before your `context.step`), or a key of
   * yours naming one step of the execution: two calls with one key are one step (the second a `duplicate`).
   */
  async commitStep<R>(
    execution: ExecutionRef,
    step: StepRef,
    fn: (ctx: StepEffectContext<W>) => R | Promise<R>,
  ): Promise<StepEffectOutcome<R>> {
    const exec = executionOf(execution);
    const marker = this.#markerKey(exec, step);
    const stepName = stepNameOf(step);
    const started = performance.now();
    const writes: W[] = [];
    const ctx: StepEffectContext<W> = {
      executionName: exec.executionName,
      stepName,
      stepId: typeof step === "string" ? undefined : step.id,
      subject: exec.subject,
      identity: exec.identity,
      position: exec.position ?? undefined,
      fence: clockFence(this.#clock.now(), this.#clock.random?.() ?? Math.random()),
      atCommit: (write) => {
        writes.push(this.#check(write));
      },
      effectKey: stepEffectKeys(exec, step),
    };
    const result = await fn(ctx);
    const outcome = await this.#commit<R>(exec, stepName, marker, ctx.fence, result, writes);
    this.#observe(exec, stepName, outcome, performance.now() - started);
    return outcome;
  }

  /** @deprecated Renamed `commitStep` (the guard's `apply` is another thing); removed in the next minor version. */
  apply<R>(
    execution: ExecutionRef,
    step: StepRef,
    fn: (ctx: StepEffectContext<W>) => R | Promise<R>,
  ): Promise<StepEffectOutcome<R>> {
    return this.commitStep(execution, step, fn);
  }

  #markerKey(exec: DispatchedExecution, step: StepRef): string {
    return this.#engine.markerKey?.(exec, step) ?? markerKey(exec, step);
  }

  /** The write as the engine's, or an `UnsupportedAtomicWriteError` before anything is sent. */
  #check(write: AtomicWrite): W {
    const engine = this.#engine;
    if (!engine.isWrite(write)) {
      throw new UnsupportedAtomicWriteError(
        `${engine.what} folds ${engine.displayName} writes only, not a ${write.engine} write`,
      );
    }
    engine.checkWrite?.(write);
    return write;
  }

  async #commit<R>(
    exec: DispatchedExecution,
    stepName: string,
    markerKey: string,
    fence: number,
    result: R,
    writes: W[],
  ): Promise<StepEffectOutcome<R>> {
    if (writes.length > this.#engine.maxWrites) {
      throw new TransactionLimitError(
        `a guarded step may fold ${this.#engine.maxWrites} writes, got ${writes.length}`,
      );
    }
    const nowMs = this.#clock.now();
    const answer = await this.#engine.commit({
      execution: exec,
      stepName,
      markerKey,
      fence,
      result: serializeStepResult(result, this.#engine.maxResultBytes),
      nowMs,
      expiresAtSeconds: Math.ceil(nowMs / 1000) + this.#markerSeconds,
      writes,
    });
    if (answer.kind === "fence") return { status: "stale", current: answer.holder };
    if (answer.kind === "marker") {
      // Our own fence in the marker: this very attempt landed and lost its answer.
      if (answer.fence === fence) {
        return {
          status: "processed",
          result,
          writes: writes.map((w) => ({ description: w.description, status: "unknown" })),
        };
      }
      return { status: "duplicate", result: parseResult<R>(answer.result) as R };
    }
    return { status: "processed", result, writes: answer.writes };
  }

  /**
   * Stops an execution's guarded steps: its fence is marked stopped, so each later step of it is refused (`stale`)
   * however late it lands. `stale` when a newer execution of the subject already holds the fence (it is refused
   * anyway). One request. Stop the durable execution itself with Lambda's `StopDurableExecution`.
   */
  stop(execution: ExecutionRef): Promise<"stopped" | "stale"> {
    return this.#engine.stop(executionOf(execution));
  }

  /**
   * Resolves once what the steps' commits need is there (a PostgreSQL or SQLite table), else rejects with a
   * `StepEffectsNotReadyError` that names the call creating it. The dispatcher awaits it before its first Invoke, so
   * a missing table stops the event before an execution starts. One read per instance while it succeeds; a failure
   * is not kept, so a table created afterwards is found.
   */
  ready(): Promise<void> {
    this.#ready ??= (this.#engine.ready?.() ?? Promise.resolve()).catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  /**
   * The fence move as a write for the dispatcher's commit (`ctx.atCommit`): an execution is the subject's newest from
   * the moment its start is committed, so an older execution's later steps are refused at once.
   */
  fenceWrite(execution: ExecutionRef): AtomicWrite {
    return this.#engine.fenceWrite(executionOf(execution));
  }

  /** Whether a step of an execution was applied, and its stored result (a consistent read; for tests and operators). */
  async marker(execution: ExecutionRef, step: StepRef): Promise<{ applied: boolean; result?: unknown }> {
    const exec = executionOf(execution);
    const found = await this.#engine.readMarker(this.#markerKey(exec, step));
    if (!found) return { applied: false };
    const result = parseResult(found.result);
    return result === undefined ? { applied: true } : { applied: true, result };
  }

  #observe(
    exec: DispatchedExecution,
    stepName: string,
    outcome: StepEffectOutcome<unknown>,
    ms: number,
  ): void {
    const inv = this.#observer.invocation({ requestId: exec.executionName });
    const { status } = outcome;
    const text =
      status === "processed"
        ? `step ${stepName} applied for ${exec.subject}`
        : status === "duplicate"
          ? `step ${stepName} already applied for ${exec.subject}: stored result returned`
          : `step ${stepName} refused for ${exec.subject}: ${
              outcome.current.stopped
                ? "the execution was stopped"
                : `superseded by ${outcome.current.position}`
            }`;
    inv.metrics.count(OUTCOMES[status].counter);
    inv.log(OUTCOMES[status].level, text, {
      status,
      step: stepName,
      executionName: exec.executionName,
      subject: exec.subject,
      identity: exec.identity,
      position: positionOf(exec),
      durationMs: Math.round(ms),
      ...(outcome.status === "processed" ? { writes: outcome.writes } : {}),
    });
    try {
      inv.flush();
    } catch (error) {
      inv.log("warn", "metrics could not be published", { error }); // never fail a step over metrics
    }
  }
}

/**
 * A step's effect keys, scoped by `markerStep` (the execution name, the step's operation id and name, or your key)
 * rather than the engine's marker key: one step has the same keys on every engine.
 */
function stepEffectKeys(exec: DispatchedExecution, step: StepRef): (name: string) => string {
  const scope: EffectKeyScope = { kind: "step", step: markerStep(exec, step) };
  return (name) => effectKey(scope, name);
}

/**
 * The key `ctx.effectKey(name)` gives inside the step `step` of an execution (its SDK identity, as `nextStepIdentity`
 * gave it, or your step key): for a script that looks a step's call up at the provider afterwards.
 */
export function stepEffectKey(execution: ExecutionRef, step: StepRef, name: string): string {
  return stepEffectKeys(executionOf(execution), step)(name);
}

/** The execution a reference names. */
export function executionOf(ref: ExecutionRef): DispatchedExecution {
  return "effectivelyOnce" in ref
    ? dispatchedExecution(ref)
    : dispatchedExecution({ effectivelyOnce: 1, execution: ref });
}
