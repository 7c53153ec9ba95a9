import { randomUUID } from "node:crypto";
import { describeValue } from "../../core/describe-value.js";
import { OptionsError } from "../../core/errors.js";
import { FaultInjector, type FaultOptions } from "../sim/faults.js";
import type { Simulation } from "../sim/simulation.js";
import type { SourceKind } from "../sim/trace.js";
import type { LocalFunction, RunResult } from "./lambda-runner.js";

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

/** An event that failed every attempt: where Lambda's on-failure destination would get it. */
export interface FailedAsyncEvent {
  event: unknown;
  records: string[];
  requestId: string;
  lastRun: RunResult;
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
    this.#maxRetries = options.maxRetries ?? 2;
    if (!Number.isSafeInteger(this.#maxRetries) || this.#maxRetries < 0 || this.#maxRetries > 2) {
      throw new OptionsError(
        `async invoke: maxRetries must be 0, 1 or 2 (as in Lambda), got ${describeValue(this.#maxRetries)}`,
      );
    }
    this.#retryDelaysMs = options.retryDelaysMs ?? [1000, 2000];
    if (this.#retryDelaysMs.length === 0 || this.#retryDelaysMs.some((d) => !(d >= 0))) {
      throw new OptionsError("async invoke: retryDelaysMs must be a non-empty list of non-negative numbers");
    }
    this.#faults = new FaultInjector(options.faults, sim.prng.fork(`async:${fn.name}:${source}`));
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
    let run: RunResult | undefined;
    for (let attempt = 1; attempt <= this.#maxRetries + 1; attempt++) {
      if (this.#sim.sleeper.stopped) return;
      if (attempt > 1) {
        const wait = this.#retryDelaysMs[Math.min(attempt - 2, this.#retryDelaysMs.length - 1)] ?? 0;
        await this.#sim.sleeper.sleep(wait);
        if (this.#sim.sleeper.stopped) return;
      }
      const runId = randomUUID();
      this.#sim.trace.emit({
        type: "delivery",
        atMs: this.#sim.now(),
        source: this.#source,
        functionName: this.#fn.name,
        requestId,
        runId,
        records,
        attempt,
        duplicate,
      });
      run = await this.#fn.invoke(event, { attempt, requestId, runId });
      if (run.status === "succeeded") return;
    }
    if (!run) return;
    this.failed.push({ event, records, requestId, lastRun: run });
    this.#sim.trace.emit({
      type: "dead-letter",
      atMs: this.#sim.now(),
      source: this.#source,
      functionName: this.#fn.name,
      records,
    });
  }
}
