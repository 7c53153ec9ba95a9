import type { Context } from "aws-lambda";
import { LambdaDeadlineError } from "./errors.js";

export interface Deadline {
  /** Epoch ms by which waiting gives up; undefined without a Lambda context (the guard's default applies). */
  deadlineMs: number | undefined;
  /**
   * Aborts `marginMs` before the Lambda times out. Made at its first read (its timer armed then): an invocation whose
   * runs never read it (mode `apply`) pays for no controller and no timer.
   */
  readonly signal: AbortSignal;
  /** Whether the deadline has passed (without making the signal). */
  passed(): boolean;
  dispose(): void;
}

/** The invocation's deadline: `getRemainingTimeInMillis()` minus a margin left for release, commit and reply. */
export function lambdaDeadline(context: Partial<Context> | undefined, marginMs: number): Deadline {
  if (typeof context?.getRemainingTimeInMillis !== "function") return new LazyDeadline(undefined, 0);
  const remainingMs = context.getRemainingTimeInMillis();
  const budgetMs = Math.max(0, remainingMs - marginMs);
  return new LazyDeadline(Date.now() + budgetMs, remainingMs - budgetMs);
}

class LazyDeadline implements Deadline {
  readonly deadlineMs: number | undefined;
  /** What is left when it aborts: the margin, or less when the invocation had less. */
  readonly #leftMs: number;
  #controller: AbortController | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #disposed = false;

  constructor(deadlineMs: number | undefined, leftMs: number) {
    this.deadlineMs = deadlineMs;
    this.#leftMs = leftMs;
  }

  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = new AbortController();
    this.#controller = controller;
    // Disposed (the invocation returned): a late reader gets a signal that never aborts, as the timer is cleared then.
    if (this.deadlineMs === undefined || this.#disposed) return controller.signal;
    const abort = () => controller.abort(new LambdaDeadlineError(this.#leftMs));
    const inMs = this.deadlineMs - Date.now();
    if (inMs <= 0) abort();
    else this.#timer = setTimeout(abort, inMs);
    return controller.signal;
  }

  passed(): boolean {
    if (this.#controller?.signal.aborted) return true;
    return this.deadlineMs !== undefined && Date.now() >= this.deadlineMs;
  }

  dispose(): void {
    this.#disposed = true;
    clearTimeout(this.#timer);
  }
}
