import type { Context } from "aws-lambda";
import { LambdaDeadlineError } from "./errors.js";

export interface Deadline {
  /** Epoch ms by which waiting gives up; undefined without a Lambda context (the guard's default applies). */
  deadlineMs: number | undefined;
  /** Aborts `marginMs` before the Lambda times out. */
  signal: AbortSignal;
  dispose(): void;
}

/** The invocation's deadline: `getRemainingTimeInMillis()` minus a margin left for release, commit and reply. */
export function lambdaDeadline(context: Partial<Context> | undefined, marginMs: number): Deadline {
  const controller = new AbortController();
  if (typeof context?.getRemainingTimeInMillis !== "function") {
    return { deadlineMs: undefined, signal: controller.signal, dispose() {} };
  }
  const remainingMs = context.getRemainingTimeInMillis();
  const budgetMs = Math.max(0, remainingMs - marginMs);
  const timer = setTimeout(() => controller.abort(new LambdaDeadlineError(remainingMs - budgetMs)), budgetMs);
  return {
    deadlineMs: Date.now() + budgetMs,
    signal: controller.signal,
    dispose: () => clearTimeout(timer),
  };
}
