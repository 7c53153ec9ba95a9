import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";
import { func, integer, nested, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import { FaultInjector, type FaultOptions, type RunFaults, resolveFaults } from "../../sim/live/faults.js";
import type { Simulation } from "../../sim/live/simulation.js";
import type { RunStatus } from "../../sim/live/trace.js";
import { numberField } from "../fields.js";
import { type InvocationScope, runInScope } from "./invocation-scope.js";
import { createLambdaContext } from "./lambda-context.js";

/**
 * Any Lambda handler, whatever event type it declares (a `never` parameter accepts them all; the
 * runtime hands it the event its source builds).
 */
export type AnyLambdaHandler = (event: never, context: Context) => unknown;

/** A local Lambda function: its handler, timeout, concurrency and run faults. */
export interface LocalFunctionOptions {
  name: string;
  handler: AnyLambdaHandler;
  /** Lambda's function timeout. Default 3 000 (Lambda's default is 3 s too). */
  timeoutMs?: number;
  /** Reserved concurrency: runs beyond it wait for a free slot. Default 10. */
  concurrency?: number;
  memoryMb?: number;
  /** Run faults (fail before/after, slow, crash); delivery faults belong to the source. */
  faults?: FaultOptions;
}

/** How one run of a local function ended. */
export interface LocalInvocationResult {
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

/**
 * What becomes of a crashed run's claims when the runtime stops. `keep`: nothing, as after a real crash: its code
 * never resumes, the claim stays `running` until its lease runs out (then another delivery may take it over, or
 * `eonce state release` / `forget` clears it). `release`: its code throws RuntimeStoppedError at the fault point, and
 * the guard releases the claim on its way out.
 */
export type CrashedClaims = "keep" | "release";
/** Every CrashedClaims value, for option checks and the `--crashed-claims` flag. */
export const CRASHED_CLAIMS: readonly CrashedClaims[] = ["keep", "release"];

/** What a crashed run's hanging code gets when the runtime stops with crashed claims `release`. */
export class RuntimeStoppedError extends Error {
  constructor() {
    super("the local runtime stopped while this run was crashed");
    this.name = "RuntimeStoppedError";
  }
}

/** The options of a LocalFunction, field by field; `doc` is the help line of the `eonce run` flag. */
export const LOCAL_FUNCTION_OPTIONS = schemaFor<LocalFunctionOptions>()({
  name: required(string()),
  handler: required(func<AnyLambdaHandler>()),
  timeoutMs: numberField("a positive number of ms", (n) => Number.isFinite(n) && n > 0, {
    default: 3000,
    doc: "function timeout",
  }),
  concurrency: integer({ min: 1, default: 10, doc: "function concurrency" }),
  memoryMb: integer({ min: 1, default: 512 }),
  faults: nested(resolveFaults),
});

/** One run in progress: what starting, running and ending it share. */
interface Invocation {
  readonly requestId: string;
  readonly runId: string;
  readonly faults: RunFaults;
  readonly startedAtMs: number;
  readonly controller: AbortController;
  readonly scope: InvocationScope;
  /** Settles when the run crashes at its fault point. */
  readonly crashed: Promise<{ kind: "crashed" }>;
  /** Ends the run's activity (only the first call counts). */
  readonly endActivity: () => void;
  /** Rejects a crashed run's hanging code. */
  hung?: (error: Error) => void;
  faultPointMissed: boolean;
}

type Settled = { kind: "returned"; value: unknown } | { kind: "threw"; error: unknown };

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
  readonly #handler: AnyLambdaHandler;
  readonly #faults: FaultInjector;
  readonly #sim: Simulation;
  readonly #slotWaiters: (() => void)[] = [];
  readonly #crashed = new Set<(error: Error) => void>();
  /** Set when the runtime stops: what a run that crashes from then on gets (see stopCrashed). */
  #afterStop: CrashedClaims | undefined;
  #active = 0;
  #runs = 0;

  constructor(options: LocalFunctionOptions, sim: Simulation) {
    const o = resolveOptions("LocalFunction", LOCAL_FUNCTION_OPTIONS, options);
    this.name = o.name;
    this.timeoutMs = o.timeoutMs;
    this.concurrency = o.concurrency;
    this.memoryMb = o.memoryMb;
    this.#handler = o.handler;
    this.#faults = new FaultInjector(o.faults, sim.prng.fork(`function:${o.name}`));
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
  ): Promise<LocalInvocationResult> {
    await this.#acquire();
    const run = this.#begin(options);
    const settled = this.#execute(event, run);
    let first: Settled | { kind: "timeout" } | { kind: "crashed" };
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ kind: "timeout" }>((resolve) => {
      timer = setTimeout(() => resolve({ kind: "timeout" }), this.timeoutMs);
    });
    try {
      first = await Promise.race([settled, timedOut, run.crashed]);
    } finally {
      clearTimeout(timer);
      this.#release();
    }
    const result = this.#end(run, first, settled);
    this.#sim.trace.emit({
      type: "run",
      atMs: this.#sim.now(),
      functionName: this.name,
      requestId: run.requestId,
      runId: run.runId,
      status: result.status,
      durationMs: result.durationMs,
      faults: run.faults,
      ...(result.error !== undefined ? { error: describe(result.error) } : {}),
      ...(run.faultPointMissed ? { faultPointMissed: true } : {}),
    });
    return result;
  }

  #begin(options: { attempt?: number; requestId?: string; runId?: string }): Invocation {
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
    // The run counts as activity until its code settles (zombies included), except once it has crashed:
    // crashed code hangs until stop, and the runtime must still be able to go idle.
    const endActivity = this.#sim.activity.begin();
    const crash = () => {
      reportCrash();
      endActivity();
      return new Promise<never>((_, reject) => {
        if (this.#afterStop === "release") return reject(new RuntimeStoppedError());
        if (this.#afterStop === "keep") return; // dead: never settles
        run.hung = reject;
        this.#crashed.add(reject);
      });
    };
    const scope: InvocationScope = {
      requestId,
      runId,
      functionName: this.name,
      faults,
      signal: controller.signal,
      faultPointReached: false,
      sleep: (ms) => this.#sim.sleeper.sleep(ms),
      crash,
    };
    const run: Invocation = {
      requestId,
      runId,
      faults,
      startedAtMs,
      controller,
      scope,
      crashed,
      endActivity,
      faultPointMissed: false,
    };
    return run;
  }

  /** The handler in the run's scope, with the run's faults around it; never rejects. */
  #execute(event: unknown, run: Invocation): Promise<Settled> {
    const { scope, faults } = run;
    const context = createLambdaContext({
      functionName: this.name,
      timeoutMs: this.timeoutMs,
      memoryMb: this.memoryMb,
      startedAtMs: run.startedAtMs,
      requestId: run.requestId,
      now: this.#sim.now,
    });
    const work = runInScope(scope, async () => {
      if (faults.failBefore) throw new InjectedFailure("before");
      const result = await this.#handler(event as never, context);
      // A handler without a fault point still gets its slowness (and crash) before it reports back;
      // the run says so, since the fault then hits after the effect instead of before it.
      if (!scope.faultPointReached) {
        scope.faultPointReached = true;
        run.faultPointMissed = faults.slowMs > 0 || faults.crash;
        if (faults.slowMs > 0) await scope.sleep(faults.slowMs);
        if (faults.crash) await scope.crash();
      }
      if (faults.failAfter) throw new InjectedFailure("after");
      return result;
    });
    return work.then(
      (value) => ({ kind: "returned" as const, value }),
      (error: unknown) => ({ kind: "threw" as const, error }),
    );
  }

  /** The run's result as Lambda reports it; a timed-out or crashed run goes on as a zombie. */
  #end(
    run: Invocation,
    first: Settled | { kind: "timeout" } | { kind: "crashed" },
    settled: Promise<Settled>,
  ): LocalInvocationResult {
    const { requestId, runId, faults } = run;
    const durationMs = this.#sim.now() - run.startedAtMs;
    if (first.kind === "returned") {
      run.endActivity();
      return { requestId, runId, status: "succeeded", result: first.value, durationMs, faults };
    }
    if (first.kind === "threw") {
      run.endActivity();
      return { requestId, runId, status: "failed", error: first.error, durationMs, faults };
    }
    const timeout = first.kind === "timeout";
    run.controller.abort(new Error(timeout ? "Task timed out" : "Runtime exited"));
    void this.#followZombie(runId, settled, () => {
      if (run.hung) this.#crashed.delete(run.hung);
    }).finally(run.endActivity);
    return {
      requestId,
      runId,
      status: timeout ? "timed-out" : "crashed",
      error: new Error(
        timeout
          ? `Task timed out after ${(this.timeoutMs / 1000).toFixed(2)} seconds`
          : "Runtime exited (injected crash)",
      ),
      durationMs,
      faults,
    };
  }

  /**
   * What the runtime's stop does to crashed runs, whose code hangs at its fault point (see CrashedClaims): `keep`
   * drops them unsettled, so their code never resumes and the claims they hold stay as a crash leaves them;
   * `release` makes it throw RuntimeStoppedError, so it unwinds and the guard releases what it can. Runs that
   * crash later get the same.
   */
  stopCrashed(mode: CrashedClaims): void {
    this.#afterStop = mode;
    if (mode === "release") for (const reject of this.#crashed) reject(new RuntimeStoppedError());
    this.#crashed.clear();
  }

  /** stopCrashed("release"). */
  unwindCrashed(): void {
    this.stopCrashed("release");
  }

  #followZombie(runId: string, settled: Promise<Settled>, cleanup: () => void): Promise<void> {
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

export function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
