import { EffectivelyOnceError, MalformedEventError } from "../core/errors.js";

/**
 * Lambda refused to start the durable execution: its name was already started with another payload
 * (`DurableExecutionAlreadyStartedException`). The event's identity was reused for other content, or the payload
 * builder changed while the first execution is retained. Thrown from the dispatcher's handler: the claim is released,
 * the delivery ends `failed` (not acknowledged), so it is retried and then dead-lettered (SQS redrive, or the async
 * invoke's on-failure destination) for someone to look at. `cause` is Lambda's exception.
 */
export class DurableExecutionConflictError extends EffectivelyOnceError {
  /** The execution name Lambda refused. */
  readonly executionName: string;
  constructor(executionName: string, options?: { cause?: unknown }) {
    super(
      `durable execution ${executionName} was already started with another payload ` +
        "(DurableExecutionAlreadyStartedException): not started again",
      options,
    );
    this.executionName = executionName;
  }
}

/**
 * Lambda answered the Invoke with an error other than a name conflict (throttling, permissions, a network error):
 * the delivery fails and is retried. `cause` is the SDK's error.
 */
export class DurableStartError extends EffectivelyOnceError {
  /** The execution name the Invoke carried. */
  readonly executionName: string;
  constructor(executionName: string, options?: { cause?: unknown }) {
    super(`durable execution ${executionName} could not be started`, options);
    this.executionName = executionName;
  }
}

/** A durable handler's payload that the dispatcher did not build (no `effectivelyOnce` envelope). */
export class NotDispatchedError extends EffectivelyOnceError {}

/**
 * A payload value JSON cannot carry as it is (`canonicalJson`): sent, it would reach the durable function changed,
 * and its fingerprint would not see the change. A `MalformedEventError`: the dispatcher routes the event as
 * malformed (acknowledged and counted on a direct invoke, left to the dead-letter queue on SQS). `path` says where
 * in the value (`detail.lines[2].price`).
 */
export class PayloadValueError extends MalformedEventError {}

/**
 * What a step effects' commits need is missing (the PostgreSQL or SQLite table): found before anything is started,
 * so that no durable execution begins whose steps could never commit. The message names the call that creates it.
 */
export class StepEffectsNotReadyError extends EffectivelyOnceError {}
