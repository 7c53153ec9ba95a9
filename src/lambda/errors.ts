import { EffectivelyOnceError } from "../core/errors.js";

/**
 * A direct (asynchronous) invocation had records that must be retried: busy or in flight after the
 * policy, a failed handler, a store error. Thrown so that Lambda retries the invocation; the records that
 * did succeed come back as duplicates then. `failures` lists the failed deliveries.
 */
export class DeliveryFailedError extends EffectivelyOnceError {
  readonly failures: readonly { correlationId: string; recordIndex: number; status: string }[];
  constructor(failures: DeliveryFailedError["failures"], total: number, options?: { cause?: unknown }) {
    const list = failures.map((f) => `${f.correlationId} (${f.status})`).join(", ");
    super(`${failures.length} of ${total} deliveries failed and will be retried: ${list}`, options);
    this.failures = failures;
  }
}

/** The abort reason of the handler's signal when the Lambda is about to time out. */
export class LambdaDeadlineError extends EffectivelyOnceError {
  constructor(remainingMs: number) {
    super(`the Lambda invocation times out in ${remainingMs} ms: aborting`);
  }
}
