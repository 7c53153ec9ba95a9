import { randomUUID } from "node:crypto";
import { custom, integer, nested, resolveOptions, schemaFor } from "../../core/options.js";
import { FaultInjector, type FaultOptions, resolveFaults } from "../../sim/live/faults.js";
import type { Simulation } from "../../sim/live/simulation.js";
import type { SourceKind, TraceEvent } from "../../sim/live/trace.js";
import { isDuration } from "../fields.js";
import type { LocalFunction, LocalInvocationResult } from "./local-function.js";

/** Lambda's asynchronous invocation: how often, and after how long, a failed run is retried. */
export interface AsyncInvokeOptions {
  /** Retries after a failed, timed-out or crashed run. Lambda's default (and maximum) is 2. */
  maxRetries?: number;
  /**
   * Wait before each retry. Lambda waits about 1 minute, then 2; locally the same shape scaled down.
   * Default [1000, 2000]. The last value repeats if there are more retries than delays.
   */
  retryDelaysMs?: number[];
  /** Delivery faults: duplicateRate, reorderWindowMs (run faults belong to the function). */
  faults?: FaultOptions;
}

/** The async invoke options, field by field: retries as Lambda allows them (0 to 2). */
export const ASYNC_INVOKE_OPTIONS = schemaFor<AsyncInvokeOptions>()({
  maxRetries: integer({ min: 0, max: 2, default: 2 }),
  retryDelaysMs: custom<number[], { default: number[] }>(
    "a non-empty list of non-negative numbers",
    (v) => Array.isArray(v) && v.length > 0 && v.every((d) => typeof d === "number" && isDuration(d)),
    { default: [1000, 2000] },
  ),
  faults: nested(resolveFaults),
});

/** A trace event of an invoker, without what the invoker adds (its function and source, the time). */
type OwnEvent<T extends TraceEvent["type"]> = Omit<
  Extract<TraceEvent, { type: T }>,
  "atMs" | "source" | "functionName"
>;

/** An event that failed every attempt: where Lambda's on-failure destination would get it. */
export interface FailedAsyncEvent {
  event: unknown;
  records: string[];
  requestId: string;
  lastRun: LocalInvocationResult;
}

/**
 * Asynchronous invocation, as S3 and EventBridge use it: the caller does not wait; Lambda queues the
 * event, runs it, and on error (throw, timeout, crash) retries it up to `maxRetries` times after a delay,
 * with the same request id. Duplicate deliveries (injected) are separate invocations with new ids.
 */
export class AsyncInvoker {
  readonly failed: FailedAsyncEvent[] = [];
  readonly #fn: LocalFunction;
  readonly #source: SourceKind;
  readonly #maxRetries: number;
  readonly #retryDelaysMs: number[];
  readonly #faults: FaultInjector;
  readonly #sim: Simulation;

  constructor(fn: LocalFunction, source: SourceKind, options: AsyncInvokeOptions, sim: Simulation) {
    this.#fn = fn;
    this.#source = source;
    const o = resolveOptions("async invoke", ASYNC_INVOKE_OPTIONS, options);
    this.#maxRetries = o.maxRetries;
    this.#retryDelaysMs = o.retryDelaysMs;
    this.#faults = new FaultInjector(o.faults, sim.prng.fork(`async:${fn.name}:${source}`));
    this.#sim = sim;
  }

  /**
   * Hands one event over. Returns at once; the runtime's activity counter tracks it until its last
   * attempt ends. `records` are the correlation ids of what the event carries, for traces.
   */
  deliver(event: unknown, records: string[]): void {
    const { delaysMs } = this.#faults.forDelivery();
    delaysMs.forEach((delayMs, copy) => {
      void this.#sim.activity.track(this.#deliverCopy(event, records, delayMs, copy > 0));
    });
  }

  async #deliverCopy(event: unknown, records: string[], delayMs: number, duplicate: boolean): Promise<void> {
    await this.#sim.sleeper.sleep(delayMs);
    const requestId = randomUUID();
    let run: LocalInvocationResult | undefined;
    for (let attempt = 1; attempt <= this.#maxRetries + 1; attempt++) {
      if (this.#sim.sleeper.stopped) return;
      if (attempt > 1) {
        const wait = this.#retryDelaysMs[Math.min(attempt - 2, this.#retryDelaysMs.length - 1)] ?? 0;
        await this.#sim.sleeper.sleep(wait);
        if (this.#sim.sleeper.stopped) return;
      }
      const runId = randomUUID();
      this.#trace({ type: "delivery", requestId, runId, records, attempt, duplicate });
      run = await this.#fn.invoke(event, { attempt, requestId, runId });
      if (run.status === "succeeded") return;
    }
    if (!run) return;
    this.failed.push({ event, records, requestId, lastRun: run });
    this.#trace({ type: "dead-letter", records });
  }

  /** Traces a delivery or a dead letter of this function and source, now. */
  #trace(event: OwnEvent<"delivery"> | OwnEvent<"dead-letter">): void {
    this.#sim.trace.emit({
      ...event,
      atMs: this.#sim.now(),
      source: this.#source,
      functionName: this.#fn.name,
    });
  }
}
