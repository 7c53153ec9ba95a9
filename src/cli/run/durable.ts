import { normalizeSequencer } from "../../core/position.js";
import type { DurableStart, LocalLambdaServer } from "../../local/emulators/lambda-server.js";
import { installLine } from "../../local/emulators/requirements.js";
import { NO_FAULTS, type ResolvedFaults } from "../../sim/live/faults.js";
import type { Prng } from "../../sim/prng.js";
import { loadExport } from "../load-export.js";
import { checkDurable, type ExecutionOutcome } from "./durable-checks.js";
import { type DurableReport, durableReport } from "./durable-report.js";
import { describeLoadError, firstLine } from "./errors.js";
import { handlerPath } from "./load-handler.js";
import { type Classified, gotThrough } from "./outcomes.js";
import { type RunReport, verdict } from "./report.js";

/**
 * `eonce run` with a durable dispatcher: the local Lambda endpoint records the starts (with the run's invoke faults),
 * `--durable <module:export>` runs each started execution under `LocalDurableTestRunner`
 * (`@aws/durable-execution-sdk-js-testing`, an optional package), and the report gets the starts, the executions'
 * ends and the checks D1–D3 (durable-checks.ts).
 */

/** The testing package as used here: the runner, its environment (a checkpoint worker thread) and its result. */
interface TestingPackage {
  LocalDurableTestRunner: {
    new (params: { handlerFunction: never }): { run(params?: { payload?: unknown }): Promise<TestResult> };
    setupTestEnvironment(params?: { skipTime?: boolean }): Promise<void>;
    teardownTestEnvironment(): Promise<void>;
  };
}
interface TestResult {
  getStatus(): string | undefined;
  getResult(): unknown;
  getError(): unknown;
}

/** The `--durable` handler and the runner to run it with. */
export interface DurableSetup {
  spec: string;
  handler: (...args: never[]) => unknown;
  testing: TestingPackage;
}

const TESTING_PACKAGE = "@aws/durable-execution-sdk-js-testing";

/**
 * An execution still running after this long is reported `RUNNING` and left: waits take real time here (the runner's
 * time skipping fakes the process's timers, which the servers and the guard run on).
 */
export const EXECUTION_TIMEOUT_MS = 60_000;

/** Loads the `--durable` module (after the environment is set, as the handler) and the testing package. */
export async function loadDurable(spec: string): Promise<DurableSetup> {
  let testing: TestingPackage;
  try {
    testing = (await import(TESTING_PACKAGE)) as unknown as TestingPackage;
  } catch (cause) {
    throw new Error(
      `--durable runs the executions under LocalDurableTestRunner: run \`${installLine([TESTING_PACKAGE])}\``,
      { cause },
    );
  }
  try {
    const { fn } = await loadExport(spec, { defaultName: "handler", what: "durable handler" });
    return { spec, handler: fn, testing };
  } catch (error) {
    throw new Error(`--durable: ${describeLoadError(error, handlerPath(spec))}`);
  }
}

/** The durable side of one run: the endpoint's faults, the executions' queue, and the report's part. */
export class DurableSession {
  readonly #server: LocalLambdaServer;
  readonly #setup: DurableSetup | undefined;
  readonly #prng: Prng;
  readonly #reorder: boolean;
  readonly #pending: DurableStart[] = [];
  readonly #executions: ExecutionOutcome[] = [];
  #chain: Promise<void> = Promise.resolve();
  #unsubscribe: (() => void) | undefined;

  private constructor(
    server: LocalLambdaServer,
    setup: DurableSetup | undefined,
    faults: ResolvedFaults,
    prng: Prng,
  ) {
    this.#server = server;
    this.#setup = setup;
    this.#prng = prng;
    this.#reorder = faults.reorderWindowMs > 0;
    server.injectFaults({ failRate: faults.invokeFailRate, lostRate: faults.invokeLostRate });
  }

  /**
   * Sets the endpoint's faults and, with `--durable`, the runner's environment (real time), then runs each start as it
   * is recorded: one at a time, in start order, or with `--reorder-window-ms` in a seeded order among those pending.
   */
  static async open(
    server: LocalLambdaServer,
    setup: DurableSetup | undefined,
    faults: ResolvedFaults | undefined,
    prng: Prng,
  ): Promise<DurableSession> {
    const session = new DurableSession(server, setup, faults ?? NO_FAULTS, prng.fork("durable-executions"));
    if (setup) {
      await setup.testing.LocalDurableTestRunner.setupTestEnvironment({ skipTime: false });
      session.#unsubscribe = server.onStart((start) => session.#enqueue(start));
    }
    return session;
  }

  #enqueue(start: DurableStart): void {
    this.#pending.push(start);
    // One link per start: each takes one pending start, so every start runs once.
    this.#chain = this.#chain.then(() => this.#runNext());
  }

  async #runNext(): Promise<void> {
    const at = this.#reorder ? this.#prng.int(0, this.#pending.length - 1) : 0;
    const [start] = this.#pending.splice(at, 1);
    if (start && this.#setup) this.#executions.push(await runExecution(this.#setup, start));
  }

  /** Waits for the executions, then checks: undefined when the handler never invoked Lambda and no `--durable`. */
  async finish(run: {
    classified: Classified;
    bucket?: string | undefined;
  }): Promise<DurableReport | undefined> {
    await this.#chain;
    const { starts, invokes } = this.#server;
    if (invokes.length === 0 && !this.#setup) return undefined;
    const executions = this.#setup ? [...this.#executions].sort((a, b) => a.order - b.order) : undefined;
    const checks = checkDurable({
      starts,
      invokes,
      ...(run.bucket !== undefined ? { events: uploadEvents(run.classified, run.bucket) } : {}),
      ...(executions ? { executions } : {}),
    });
    return durableReport({ starts, invokes, checks, durable: this.#setup?.spec, executions });
  }

  async close(): Promise<void> {
    this.#unsubscribe?.();
    if (this.#setup) await this.#setup.testing.LocalDurableTestRunner.teardownTestEnvironment();
  }
}

/** The input bucket's events as D2 compares them: subject `bucket/key`, normalized sequencer, got through. */
function uploadEvents(classified: Classified, bucket: string) {
  return [...classified.perEvent.values()].flatMap((e) =>
    e.sequencer
      ? [
          {
            subject: `${bucket}/${e.key}`,
            position: normalizeSequencer(e.sequencer),
            gotThrough: gotThrough(e),
          },
        ]
      : [],
  );
}

/** Runs one execution under LocalDurableTestRunner, bounded by EXECUTION_TIMEOUT_MS. */
async function runExecution(setup: DurableSetup, start: DurableStart): Promise<ExecutionOutcome> {
  const base = { order: start.order, name: start.name };
  let timer: NodeJS.Timeout | undefined;
  try {
    const runner = new setup.testing.LocalDurableTestRunner({ handlerFunction: setup.handler as never });
    const payload = start.payload ? (JSON.parse(start.payload) as unknown) : undefined;
    const timedOut = new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), EXECUTION_TIMEOUT_MS);
    });
    const result = await Promise.race([runner.run({ payload }), timedOut]);
    if (!result) {
      return { ...base, status: "RUNNING", error: `still running after ${EXECUTION_TIMEOUT_MS / 1000} s` };
    }
    const status = result.getStatus() ?? "UNKNOWN";
    if (status === "SUCCEEDED") return { ...base, status, result: result.getResult() ?? null };
    return { ...base, status, error: executionError(result) };
  } catch (error) {
    return { ...base, status: "FAILED", error: firstLine(error) };
  } finally {
    clearTimeout(timer);
  }
}

function executionError(result: TestResult): string {
  try {
    const e = result.getError() as { errorType?: string; errorMessage?: string } | undefined;
    return [e?.errorType, e?.errorMessage].filter(Boolean).join(": ") || "no error given";
  } catch (error) {
    return firstLine(error);
  }
}

/** The report with its durable part, its result judged on the durable checks too. */
export function withDurable(report: RunReport, durable: DurableReport | undefined): RunReport {
  if (!durable) return report;
  const checks = [...report.invariants, ...durable.checks];
  return { ...report, durable, ...verdict(checks, report.unsuccessful.total) };
}
