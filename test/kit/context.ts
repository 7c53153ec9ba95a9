import type { Context } from "aws-lambda";
import { createLambdaContext } from "../../src/local/delivery/lambda-context.js";

/**
 * A Lambda `Context` from the local runtime's own implementation (src/local), whose clock runs:
 * getRemainingTimeInMillis() counts down from `timeoutMs` (default 30 s) from now. No vitest import: the bench uses it.
 */
export function lambdaContext(
  options: { timeoutMs?: number; functionName?: string; memoryMb?: number } = {},
): Context {
  return createLambdaContext({
    functionName: options.functionName ?? "eonce-test",
    timeoutMs: options.timeoutMs ?? 30_000,
    memoryMb: options.memoryMb ?? 256,
    startedAtMs: Date.now(),
  });
}
