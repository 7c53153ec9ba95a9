import { AsyncLocalStorage } from "node:async_hooks";
import type { RunFaults } from "../../sim/live/faults.js";

/**
 * What the local Lambda runner knows about the invocation the current code runs in, carried by
 * AsyncLocalStorage so handlers need no extra parameter. Outside the local runtime (on AWS, in unit
 * tests) there is no scope and everything here is a no-op.
 */
export interface InvocationScope {
  readonly requestId: string;
  /** Unique per run (async retries share the request id). */
  readonly runId: string;
  readonly functionName: string;
  readonly faults: RunFaults;
  /** Aborted when the run times out or crashes: a frozen or dead Lambda stops renewing leases. */
  readonly signal: AbortSignal;
  /** Set by the first faultPoint() of the run. */
  faultPointReached: boolean;
  /** Sleeps `ms`; cut short when the runtime stops. */
  sleep(ms: number): Promise<void>;
  /** Reports the crash to the runner; the returned promise settles only when the runtime stops (rejecting). */
  crash(): Promise<never>;
  /** Set by whoever watches the run (`eonce run`): the `src/lambda` wrappers hand it their report. */
  report?: (report: unknown) => void;
  /** Likewise: a wrapped handler's own error, which the wrapper turns into a failed delivery. */
  handlerError?: (error: unknown) => void;
}

/**
 * One storage per process, not per module instance: a bundled handler, or one that loads another copy of
 * this package, must see the scope the runner set, or its faultPoint() silently does nothing. The shape
 * above is the contract between copies; fields are only ever added, as optional ones.
 */
const SCOPE_KEY = Symbol.for("effectively-once.local-invocation-scope");
type Registry = { storage: AsyncLocalStorage<InvocationScope> };
const global = globalThis as Record<symbol, Registry | undefined>;
global[SCOPE_KEY] ??= { storage: new AsyncLocalStorage<InvocationScope>() };
const storage = (global[SCOPE_KEY] as Registry).storage;

export function runInScope<T>(scope: InvocationScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** The local invocation the calling code runs in; undefined outside the local runtime. */
export function currentInvocation(): InvocationScope | undefined {
  return storage.getStore();
}

/** The current local run's abort signal (timeout or crash), if running under the local runtime. */
export function invocationSignal(): AbortSignal | undefined {
  return storage.getStore()?.signal;
}

/**
 * Marks the point in a handler where injected slowness and crashes strike: after the input is read,
 * before the effect is written (where the AWS sample sleeps). Call it once per run; later calls do
 * nothing. Outside the local runtime it returns at once.
 */
export async function faultPoint(): Promise<void> {
  const scope = storage.getStore();
  if (!scope || scope.faultPointReached) return;
  scope.faultPointReached = true;
  if (scope.faults.slowMs > 0) await scope.sleep(scope.faults.slowMs);
  if (scope.faults.crash) await scope.crash();
}
