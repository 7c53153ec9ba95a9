import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";
import { OptionsError } from "../../core/errors.js";
import { FaultInjector, type FaultOptions, type RunFaults } from "../sim/faults.js";
import type { Simulation } from "../sim/simulation.js";
import type { RunStatus } from "../sim/trace.js";
import { type InvocationScope, runInScope } from "./invocation-scope.js";
import { createLambdaContext } from "./lambda-context.js";

/**
 * Any Lambda handler, whatever event type it declares (a `never` parameter accepts them all; the
 * runtime hands it the event its source builds).
 */
export type LambdaHandler = (event: never, context: Context) => unknown;

export interface LocalFunctionOptions {
  name: string;
  handler: LambdaHandler;
  /** Lambda's function timeout. Default 3 000 (Lambda's default is 3 s too). */
  timeoutMs?: number;
  /** Reserved concurrency: runs beyond it wait for a free slot. Default 10. */
  concurrency?: number;
  memoryMb?: number;
  /** Run faults (fail before/after, slow, crash); delivery faults belong to the source. */
  faults?: FaultOptions;
}

export interface RunResult {
  /** Lambda's request id: async retries of one event share it. */
  requestId: string;
  /** Unique per run, to tell retries apart in traces. */
  runId: string;
  status: RunStatus;
  /** The handler's return value when it succeeded. */
  result?: unknown;
  error?: unknown;
  durationMs: number;
  faults: RunFaults;
}

/** Thrown by the runtime in place of the handler (fail-before) or after it (fail-after). */
export class InjectedFailure extends Error {
  constructor(readonly when: "before" | "after") {
    super(`injected failure ${when} the handler's effect`);
    this.name = "InjectedFailure";
  }
}

/** What a crashed run's hanging code gets when the runtime finally stops. */
export class RuntimeStoppedError extends Error {
  constructor() {
    super("the local runtime stopped while this run was crashed");
    this.name = "RuntimeStoppedError";
  }
}

/**
 * One Lambda function: runs the handler with a Lambda context, at most `concurrency` at a time, and
 * gives up on a run at its timeout. A run past its timeout counts as failed but is not stopped (JS cannot
 * be killed): it goes on as a zombie, as a frozen-then-thawed Lambda can, and its signal is aborted so
 * it stops renewing leases. Crashed runs (injected) never resume.
 */
export class LocalFunction {
  readonly name: string;
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly memoryMb: number;
  readonly #handler: LambdaHandler;
  readonly #faults: FaultInjector;
  readonly #sim: Simulation;
  readonly #slotWaiters: (() => void)[] = [];
  readonly #crashed = new Set<(error: Error) => void>();
  #active = 0;
  #runs = 0;

  constructor(options: LocalFunctionOptions, sim: Simulation) {
    if (!options.name) throw new OptionsError("LocalFunction: name is required");
    if (typeof options.handler !== "function")
      throw new OptionsError("LocalFunction: handler must be a function");
    this.name = options.name;
    this.timeoutMs = positive("timeoutMs", options.timeoutMs ?? 3000);
    this.concurrency = positive("concurrency", options.concurrency ?? 10);
    this.memoryMb = positive("memoryMb", options.memoryMb ?? 512);
    this.#handler = options.handler;
    this.#faults = new FaultInjector(options.faults, sim.prng.fork(`function:${options.name}`));
    this.#sim = sim;
  }

  /** Runs currently holding a concurrency slot (zombies do not). */
  get active(): number {
    return this.#active;
  }

  /** Runs started so far, including failed and zombie ones. */
  get runs(): number {
    return this.#runs;
  }

  /**
   * Runs the handler once. `attempt` (1 = first delivery) decides whether run faults may strike.
   * Resolves when the Lambda service would report the outcome: at return, throw, timeout or crash.
   */
  async invoke(
    event: unknown,
    options: { attempt?: number; requestId?: string; runId?: string } = {},
  ): Promise<RunResult> {
    await this.#acquire();
    const requestId = options.requestId ?? randomUUID();
    const runId = options.runId ?? randomUUID();
    const faults = this.#faults.forRun(options.attempt ?? 1);
    const startedAtMs = this.#sim.now();
    this.#runs++;
    const controller = new AbortController();
    let reportCrash!: () => void;
    const crashed = new Promise<{ kind: "crashed" }>((resolve) => {
      reportCrash = () => resolve({ kind: "crashed" });
    });
    let hung: ((error: Error) => void) | undefined;
    // The run counts as activity until its code settles (zombies included), except once it has crashed:
    // crashed code hangs until stop, and the runtime must still be able to go idle.
    const endActivity = this.#sim.activity.begin();
    let faultPointMissed = false;
    const scope: InvocationScope = {
      requestId,
      runId,
      functionName: this.name,
      faults,
      signal: controller.signal,
      faultPointReached: false,
      sleep: (ms) => this.#sim.sleeper.sleep(ms),
      crash: () => {
        reportCrash();
        endActivity();
        return new Promise<never>((_, reject) => {
          if (this.#sim.sleeper.stopped) return reject(new RuntimeStoppedError());
          hung = reject;
          this.#crashed.add(reject);
        });
      },
    };
    const context = createLambdaContext({
      functionName: this.name,
      timeoutMs: this.timeoutMs,
      memoryMb: this.memoryMb,
      startedAtMs,
      requestId,
      now: this.#sim.now,
    });
    const work = runInScope(scope, async () => {
      if (faults.failBefore) throw new InjectedFailure("before");
      const result = await this.#handler(event as never, context);
      // A handler without a fault point still gets its slowness (and crash) before it reports back;
      // the run says so, since the fault then hits after the effect instead of before it.
      if (!scope.faultPointReached) {
        scope.faultPointReached = true;
        faultPointMissed = faults.slowMs > 0 || faults.crash;
        if (faults.slowMs > 0) await scope.sleep(faults.slowMs);
        if (faults.crash) await scope.crash();
      }
      if (faults.failAfter) throw new InjectedFailure("after");
      return result;
    });
    const settled = work.then(
      (value) => ({ kind: "returned" as const, value }),
      (error: unknown) => ({ kind: "threw" as const, error }),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ kind: "timeout" }>((resolve) => {
      timer = setTimeout(() => resolve({ kind: "timeout" }), this.timeoutMs);
    });
    let first: Awaited<typeof settled> | { kind: "timeout" } | { kind: "crashed" };
    try {
      first = await Promise.race([settled, timedOut, crashed]);
    } finally {
      clearTimeout(timer);
      this.#release();
    }
    const durationMs = this.#sim.now() - startedAtMs;
    let run: RunResult;
    if (first.kind === "returned") {
      endActivity();
      run = { requestId, runId, status: "succeeded", result: first.value, durationMs, faults };
    } else if (first.kind === "threw") {
      endActivity();
      run = { requestId, runId, status: "failed", error: first.error, durationMs, faults };
    } else {
      controller.abort(new Error(first.kind === "timeout" ? "Task timed out" : "Runtime exited"));
      run = {
        requestId,
        runId,
        status: first.kind === "timeout" ? "timed-out" : "crashed",
        error: new Error(
          first.kind === "timeout"
            ? `Task timed out after ${(this.timeoutMs / 1000).toFixed(2)} seconds`
            : "Runtime exited (injected crash)",
        ),
        durationMs,
        faults,
      };
      void this.#followZombie(runId, settled, () => {
        if (hung) this.#crashed.delete(hung);
      }).finally(endActivity);
    }
    this.#sim.trace.emit({
      type: "run",
      atMs: this.#sim.now(),
      functionName: this.name,
      requestId,
      runId,
      status: run.status,
      durationMs,
      faults,
      ...(run.error !== undefined ? { error: describe(run.error) } : {}),
      ...(faultPointMissed ? { faultPointMissed } : {}),
    });
    return run;
  }

  /** Makes every crashed run's hanging code throw, so it unwinds (and releases what it can). */
  unwindCrashed(): void {
    for (const reject of this.#crashed) reject(new RuntimeStoppedError());
    this.#crashed.clear();
  }

  #followZombie(
    runId: string,
    settled: Promise<{ kind: "returned"; value: unknown } | { kind: "threw"; error: unknown }>,
    cleanup: () => void,
  ): Promise<void> {
    return settled.then((outcome) => {
      cleanup();
      this.#sim.trace.emit({
        type: "zombie-end",
        atMs: this.#sim.now(),
        functionName: this.name,
        runId,
        ...(outcome.kind === "threw" ? { error: describe(outcome.error) } : {}),
      });
    });
  }

  async #acquire(): Promise<void> {
    if (this.#active < this.concurrency) {
      this.#active++;
      return;
    }
    await new Promise<void>((resolve) => this.#slotWaiters.push(resolve));
  }

  #release(): void {
    const next = this.#slotWaiters.shift();
    // The slot passes straight to the next waiter; the active count stays.
    if (next) next();
    else this.#active--;
  }
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0)
    throw new OptionsError(`LocalFunction: ${name} must be positive`);
  return value;
}

export function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
