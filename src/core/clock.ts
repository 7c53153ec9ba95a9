import { onAbort } from "./abort.js";

/**
 * Time as the guard sees it: reading the clock and sleeping. Injected so that the fault simulator can run the
 * protocol on virtual time (and skew one worker's clock) without changing a line of the guard.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Uniform in [0, 1) for back-off jitter; default Math.random (a seeded one makes simulations replayable). */
  random?(): number;
}

/** The real clock: `Date.now()` and timers (the guard's default). */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: realSleep,
};

/** A clock that reads `now` but sleeps in real time (the guard's `now` option, for tests). */
export function clockReading(now: () => number): Clock {
  return { now, sleep: realSleep };
}

/** `signal` may be shared by a whole batch's back-off sleeps: subscribed through abort.ts, one listener for all. */
function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    const unsubscribe = signal ? onAbort(signal, done) : () => {};
    function done() {
      clearTimeout(timer);
      unsubscribe();
      resolve();
    }
  });
}
