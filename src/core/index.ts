/**
 * The guard and its model: events, positions, outcomes, the state store contract, errors.
 * @module effectively-once/core
 */
// The guard and its model. Named exports only: this list is the public surface of `effectively-once/core`
// (test/exports.test.ts pins it). Option validation helpers (`core/options.ts`) are internal.
export { type Clock, systemClock } from "./clock.js";
export { EFFECT_KEY_PREFIX, type EffectKeyScope, effectKey } from "./effect-key.js";
export {
  EffectivelyOnceError,
  EffectRefusedError,
  InvalidPositionError,
  InvalidSequencerError,
  LeaseLostError,
  LeaseUnconfirmedError,
  MalformedEventError,
  OptionsError,
  ResultSerializationError,
  StoreError,
  SubjectTooLongError,
  TransactionLimitError,
  UnsupportedAtomicWriteError,
} from "./errors.js";
export type {
  Delivery,
  DynamoDBChangeEvent,
  DynamoDBChangeName,
  DynamoDBStreamViewType,
  EnvelopeKind,
  KinesisRecordEvent,
  MessageEvent,
  NormalizedEvent,
  S3ObjectEvent,
  S3Operation,
  S3TestEvent,
  SqsDelivery,
  StreamDelivery,
} from "./event.js";
export {
  type ApplyContext,
  type BusyPolicy,
  createGuard,
  type Guard,
  type GuardContext,
  type GuardedEvent,
  type GuardHandler,
  type GuardOptions,
  type GuardOutcome,
  type GuardOutcomeStatus,
  type GuardTrace,
  type InFlightPolicy,
  type RunOptions,
} from "./guard.js";
export { s3Identity, s3Operation, s3Subject } from "./identity.js";
export { type KeyKind, MalformedKeyError, requireKeyText } from "./key-text.js";
export {
  ACKNOWLEDGED_STATUSES,
  DELIVERY_STATUSES,
  type DeliveryStatus,
  GUARD_OUTCOME_STATUSES,
  isAcknowledged,
  isDeliveryStatus,
  OUTCOMES,
  type OutcomeInfo,
  RETRIED_STATUSES,
} from "./outcomes.js";
export {
  assertPosition,
  comparePositions,
  compareSequencers,
  MAX_POSITION_LENGTH,
  MAX_SEQUENCE_NUMBER_DIGITS,
  NUMERIC_POSITION_WIDTH,
  normalizeSequencer,
  type Position,
  positionBefore,
  positionFromDate,
  positionFromNumber,
  positionFromSequenceNumber,
  SEQUENCER_WIDTH,
  toPosition,
} from "./position.js";
export {
  type ClaimRequest,
  claimAllowed,
  classifyRefusal,
  describeClaim,
  isClaimable,
  isOwnClaim,
  leaseExpired,
  type Refusal,
  type StateRecord,
  type StateStatus,
  UNORDERED_POSITION,
} from "./state.js";
export { inlineRowKey, MAX_STATE_KEY_BYTES, stateKey, stateKeyOfInlineRow } from "./state-key.js";
