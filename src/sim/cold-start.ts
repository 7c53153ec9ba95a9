import type { Backend } from "./backend.js";
import type { Chooser } from "./chooser.js";
import type { HistoryFaultInjector } from "./faults.js";
import type { HistoryObserver } from "./observer.js";
import type { VirtualScheduler } from "./virtual-time.js";

/**
 * Real ms one scheduler step (a store call, the samples after it) may take while a cold start runs: beyond it, the
 * guard's statements were queued behind a migration's lock. Steps take milliseconds; the bound leaves room for a
 * loaded machine (4 s was exceeded, 4.2 s, by a cold start that waited on no lock, on 2 cores at a load of 10) and
 * stays well below READER_HOLD_MS, which a queued statement would wait.
 */
export const STALL_BOUND_MS = 6000;
/** Real ms a long reader holds the live table at most (the history's end releases it sooner). */
export const READER_HOLD_MS = 12_000;

/**
 * Cold starts beside live traffic (SQL servers: backends with `coldStart`): at one step of the history, chosen by the
 * scheduler's chooser, a few workers run the engine's migrations at once, sometimes while a long reader holds the
 * live table. Violations (I3, liveness; reported whatever the clocks, which play no part): a migration throws, a
 * cold start's migrations or any step take longer than STALL_BOUND_MS (real) meanwhile. The migrations and the
 * reader are real I/O outside the scheduler (not gates): they decide nothing in the history, so it stays a function
 * of its seed; the history waits for them at its end (`settle`).
 */
export class ColdStarts {
  readonly #pending: Promise<void>[] = [];
  #endReader: (() => Promise<void>) | undefined;
  #active = false;
  #mark = 0;

  private constructor(
    readonly o: {
      backend: Backend;
      sim: VirtualScheduler;
      observer: HistoryObserver;
      faults: HistoryFaultInjector;
    },
    readonly plan: { atStep: number; workers: number; reader: boolean },
  ) {}

  /** The plan of a history whose backend can cold-start (others draw nothing: their histories stay as they were). */
  static plan(o: ColdStarts["o"], chooser: Chooser): ColdStarts | undefined {
    if (!o.backend.coldStart) return undefined;
    const atStep = chooser.int(0, 10);
    const workers = chooser.int(2, 3);
    const reader = o.backend.holdReader !== undefined && chooser.chance(0.5);
    return new ColdStarts(o, { atStep, workers, reader });
  }

  /** Before each step's samples: checks the last step's real duration, and starts the cold start at its step. */
  async afterStep(): Promise<void> {
    const gap = Date.now() - this.#mark;
    if (this.#active && gap > STALL_BOUND_MS)
      this.#violate(`a step took ${gap}ms (real) beside a cold start: statements queued behind a migration`);
    if (this.o.sim.steps === this.plan.atStep) await this.#start();
    this.#mark = Date.now();
  }

  async #start(): Promise<void> {
    const { backend, sim, observer, faults } = this.o;
    const { workers, reader } = this.plan;
    const coldStart = backend.coldStart?.bind(backend);
    const holdReader = backend.holdReader?.bind(backend);
    if (!coldStart) return;
    faults.count("cold-start");
    if (reader && holdReader) {
      faults.count("reader");
      this.#endReader = await sim.track(() => holdReader(READER_HOLD_MS));
    }
    observer.log(
      () => `cold start: ${workers} workers migrate${reader ? " while a reader holds the table" : ""}`,
    );
    const started = Date.now();
    const cold = coldStart(workers).then(
      () => {
        const ms = Date.now() - started;
        if (ms > STALL_BOUND_MS)
          this.#violate(`a cold start's migrations took ${ms}ms (real): one waited for a lock`);
      },
      (error: unknown) =>
        this.#violate(
          `a cold start's migration threw: ${error instanceof Error ? error.message : String(error)}`,
        ),
    );
    this.#pending.push(cold);
    this.#active = true;
  }

  /** At the history's end: the cold start's migrations are done and the reader has let go. */
  async settle(): Promise<void> {
    await Promise.all(this.#pending);
    await this.#endReader?.();
    this.#active = false;
  }

  #violate(message: string): void {
    const withReader = this.plan.reader ? " (a reader held the live table)" : "";
    // Marked as fencing's so that it counts in every history: clock skew has no part in it.
    this.o.observer.violate("I3", true, `${message}${withReader}`);
  }
}
