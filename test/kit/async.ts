import { type Clock, clockReading } from "../../src/core/clock.js";

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A promise and the function that resolves it, for a test to hold a handler at a point and release it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * A guard clock (`createGuard({ clock })`) whose readings are at least 1 ms apart, for tests that count requests per
 * outcome. Fences come from the clock in µs with random sub-millisecond digits, so a claim in the same millisecond as
 * the previous one can draw a lower fence and retry once: correct, but one request more than the count expects.
 */
export function millisecondApartClock(): Clock {
  let last = Number.NEGATIVE_INFINITY;
  return clockReading(() => {
    last = Math.max(Date.now(), last + 1);
    return last;
  });
}
