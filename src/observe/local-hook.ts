/**
 * The wrappers' side of the local runtime's invocation scope (`src/local/delivery/invocation-scope.ts`), found by a
 * process-wide symbol so that neither side imports the other and any copy of the package finds it. On AWS
 * there is no scope: each call is one symbol lookup and does nothing.
 */
const SCOPE_KEY = Symbol.for("effectively-once.local-invocation-scope");

interface LocalScope {
  report?: (report: unknown) => void;
  handlerError?: (error: unknown) => void;
}

function scope(): LocalScope | undefined {
  const registry = (globalThis as Record<symbol, unknown>)[SCOPE_KEY] as
    | { storage?: { getStore(): unknown } }
    | undefined;
  return registry?.storage?.getStore() as LocalScope | undefined;
}

/** Hands an invocation's per-delivery report to a local run watching it (SQS answers carry none). */
export function reportToLocalRun(report: unknown): void {
  try {
    scope()?.report?.(report);
  } catch {
    // The watcher's problem must never change the invocation's answer.
  }
}

/** Hands an error the wrapper swallows (it becomes a failed delivery) to a local run watching it. */
export function errorToLocalRun(error: unknown): void {
  try {
    scope()?.handlerError?.(error);
  } catch {
    // As above.
  }
}
