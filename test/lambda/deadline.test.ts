import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { lambdaDeadline } from "../../src/lambda/deadline.js";
import { LambdaDeadlineError } from "../../src/lambda/errors.js";

/** The invocation's deadline on fake timers: its signal is made on first read and still aborts on time. */
const context = (remainingMs: number) => ({ getRemainingTimeInMillis: () => remainingMs });

describe("lambdaDeadline", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("arms no timer until the signal is read; read late, it still aborts at the deadline", () => {
    const deadline = lambdaDeadline(context(1_000), 300);
    expect(deadline.deadlineMs).toBe(Date.now() + 700);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(400);
    const signal = deadline.signal;
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(299);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LambdaDeadlineError);
    expect((signal.reason as Error).message).toContain("times out in 300 ms");
    expect(deadline.signal).toBe(signal);
  });

  it("passed() without making the signal; a signal first read after the deadline is aborted already", () => {
    const deadline = lambdaDeadline(context(1_000), 300);
    expect(deadline.passed()).toBe(false);
    vi.advanceTimersByTime(700);
    expect(deadline.passed()).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(deadline.signal.aborted).toBe(true);
  });

  it("less time left than the margin: passed at once, the reason says what was left", () => {
    const deadline = lambdaDeadline(context(200), 300);
    expect(deadline.passed()).toBe(true);
    expect((deadline.signal.reason as Error).message).toContain("times out in 200 ms");
  });

  it("dispose clears the timer; a signal first read after dispose never aborts", () => {
    const read = lambdaDeadline(context(1_000), 300);
    const signal = read.signal;
    read.dispose();
    const unread = lambdaDeadline(context(1_000), 300);
    unread.dispose();
    const late = unread.signal;
    vi.advanceTimersByTime(5_000);
    expect(vi.getTimerCount()).toBe(0);
    expect(signal.aborted).toBe(false);
    expect(late.aborted).toBe(false);
  });

  it("without a Lambda context: no deadline, never passed, a signal that never aborts", () => {
    const deadline = lambdaDeadline(undefined, 300);
    expect(deadline.deadlineMs).toBeUndefined();
    vi.advanceTimersByTime(60_000);
    expect(deadline.passed()).toBe(false);
    expect(deadline.signal.aborted).toBe(false);
  });
});
