import type { Clock } from "../core/clock.js";
import type { Chooser } from "./chooser.js";

/**
 * Virtual epoch (year 2096): fences (µs of the clock) stay below 2^53, and expiry times stay in the future, as
 * DynamoDB Local deletes items whose TTL attribute has passed by the real clock.
 */
export const VIRTUAL_EPOCH_MS = 4_000_000_000_000;

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
}

interface Gate {
  worker: number;
  label: string;
  release: () => void;
}

/**
 * Virtual time and a seeded scheduler. Workers only wait through `sleep` (timers) and `gate` (a scheduling point
 * before each store call). The loop runs everything that can run without time passing, then releases one waiting
 * store call (the chooser picks which: that is the interleaving), and only when no call waits, moves time to the
 * next timer. Real I/O (DynamoDB Local) is awaited through `track`, so a step ends only when its request did.
 */
export class VirtualScheduler {
  now = VIRTUAL_EPOCH_MS;
  steps = 0;
  readonly #timers: Timer[] = [];
  readonly #gates: Gate[] = [];
  #seq = 0;
  #postponed = 0;
  #inFlight = 0;
  #idle: (() => void) | undefined;

  /**
   * @param maxPostpone how many times in a history time may move on while store calls wait (0: calls always go
   *   first). Each is a choice, "these requests are slow": bounded, so that every history ends (fairness).
   */
  constructor(
    readonly chooser: Chooser,
    readonly maxPostpone = 0,
  ) {}

  /** A worker's clock: virtual time plus its offset (clock skew); sleeps and jitter come from the scheduler. */
  clock(offsetMs: number): Clock {
    return {
      now: () => this.now + offsetMs,
      sleep: (ms, signal) => this.sleep(ms, signal),
      random: () => this.chooser.random(),
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.now + Math.max(0, ms), seq: this.#seq++, fire: done };
      // Sorted insert: equal times fire in the order they were set, so runs replay exactly.
      let i = this.#timers.length;
      while (i > 0 && (this.#timers[i - 1] as Timer).at > timer.at) i--;
      this.#timers.splice(i, 0, timer);
      const timers = this.#timers;
      function done() {
        const at = timers.indexOf(timer);
        if (at >= 0) timers.splice(at, 1);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** A scheduling point: resolves when the scheduler picks this worker's call. */
  gate(worker: number, label: string): Promise<void> {
    return new Promise((release) => this.#gates.push({ worker, label, release }));
  }

  /** Runs real I/O inside a step: the scheduler waits for it before the next decision. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.#inFlight++;
    try {
      return await work();
    } finally {
      if (--this.#inFlight === 0) this.#idle?.();
    }
  }

  /** Until nothing can run without a decision: microtasks drained and no request in flight. */
  async #quiesce(): Promise<void> {
    for (;;) {
      await new Promise<void>((r) => setImmediate(r));
      if (this.#inFlight === 0) return;
      await new Promise<void>((r) => {
        this.#idle = r;
      });
      this.#idle = undefined;
    }
  }

  /**
   * Runs until no call waits and no timer is set, or `maxSteps`/`maxVirtualMs` (returns false then). `afterStep`
   * runs with everything quiescent (the invariant samplers).
   */
  async run(opts: { maxSteps: number; maxVirtualMs: number; afterStep?: () => Promise<void> | void }) {
    const end = this.now + opts.maxVirtualMs;
    for (;;) {
      await this.#quiesce();
      if (opts.afterStep) {
        await opts.afterStep();
        await this.#quiesce();
      }
      if (this.steps >= opts.maxSteps) return false;
      this.steps++;
      const timer = this.#timers[0];
      if (this.#gates.length > 0) {
        const canWait = timer !== undefined && timer.at <= end && this.#postponed < this.maxPostpone;
        const i = this.chooser.choose(this.#gates.length + (canWait ? 1 : 0), "interleave");
        if (i < this.#gates.length) {
          const [gate] = this.#gates.splice(i, 1);
          gate?.release();
          continue;
        }
        this.#postponed++;
      }
      if (!timer) return true;
      if (timer.at > end) return false;
      this.now = Math.max(this.now, timer.at);
      timer.fire();
    }
  }

  get pendingGates(): string[] {
    return this.#gates.map((g) => `w${g.worker}:${g.label}`);
  }
}
