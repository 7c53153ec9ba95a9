import { describeValue } from "./describe-value.js";

/**
 * Typed errors. Check them with `instanceof`; each carries `cause` where it wraps another error.
 *
 * Routing (docs/lambda.md): input errors (`MalformedEventError`, `InvalidSequencerError`, `SubjectTooLongError`)
 * are permanent: retrying the same bytes cannot help, so adapters acknowledge-and-count them or leave them
 * to the dead-letter queue. Store errors are transient: the delivery fails and the source retries.
 */
export class EffectivelyOnceError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Input that cannot be turned into an event. `path` says where (e.g. `Records[2].s3.object.key`). */
export class MalformedEventError extends EffectivelyOnceError {
  readonly path: string;
  constructor(message: string, path: string, options?: { cause?: unknown }) {
    super(path ? `${message} (at ${path})` : message, options);
    this.path = path;
  }
}

/** An S3 sequencer that is not a hex string of the accepted length. */
export class InvalidSequencerError extends MalformedEventError {
  readonly sequencer: unknown;
  constructor(sequencer: unknown, reason: string, path = "sequencer") {
    super(`invalid S3 sequencer ${describeValue(sequencer)}: ${reason}`, path);
    this.sequencer = sequencer;
  }
}

/** A position that cannot be encoded (negative, not an integer, too large). */
export class InvalidPositionError extends EffectivelyOnceError {}

/** A subject or identity too long for the state store key. */
export class SubjectTooLongError extends EffectivelyOnceError {}

/** Options that fail validation at construction: unknown keys, wrong types, inconsistent values. */
export class OptionsError extends EffectivelyOnceError {}

/** The claim was taken over (another run holds a newer fence: lease expired and claimed, or superseded). */
export class LeaseLostError extends EffectivelyOnceError {
  readonly stateKey: string;
  readonly fence: number;
  constructor(stateKey: string, fence: number, message = `lease lost for ${stateKey} (fence ${fence})`) {
    super(message);
    this.stateKey = stateKey;
    this.fence = fence;
  }
}

/**
 * The lease could not be confirmed: renewals failed (a store outage) until the last confirmed lease ended. Nobody
 * is known to hold the claim, so the delivery is not acknowledged: it is retried.
 */
export class LeaseUnconfirmedError extends EffectivelyOnceError {
  readonly stateKey: string;
  readonly fence: number;
  constructor(stateKey: string, fence: number, options?: { cause?: unknown }) {
    super(`lease of ${stateKey} (fence ${fence}) could not be renewed before it ended`, options);
    this.stateKey = stateKey;
    this.fence = fence;
  }
}

/**
 * The state store failed. `retryable` (the default): throttling, network, an unknown response; the request may
 * or may not have landed, so the guard retries it, recognising its own landed attempt. `retryable: false`: the
 * engine will never accept this request (e.g. an item over its size limit).
 */
export class StoreError extends EffectivelyOnceError {
  readonly retryable: boolean;
  constructor(message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options);
    this.retryable = options?.retryable ?? true;
  }
}

/**
 * A write folded into the commit with `onConditionFailed: "abort"` found its condition false: the commit was
 * cancelled (nothing landed). Not retryable as such: the guard releases the claim and the delivery fails.
 */
export class EffectRefusedError extends StoreError {
  readonly description: string;
  constructor(description: string) {
    super(`the condition of ${description} did not hold: the commit was cancelled`, { retryable: false });
    this.description = description;
  }
}

/** A commit whose folded writes exceed what one transaction may hold (count or bytes): it can never land. */
export class TransactionLimitError extends StoreError {
  constructor(message: string) {
    super(message, { retryable: false });
  }
}

/** An atomic write handed to a store that cannot fold it into its commit. */
export class UnsupportedAtomicWriteError extends EffectivelyOnceError {}

/** The handler's result cannot be stored for replay (not JSON-serializable). The run fails and is released. */
export class ResultSerializationError extends EffectivelyOnceError {}
