/**
 * Lambda handler wrappers per trigger, the visibility heartbeat and the FIFO producer helper.
 * @module effectively-once/lambda
 */
// Lambda adapters: handler wrappers per trigger (SQS, S3, EventBridge, Kinesis, DynamoDB Streams), the visibility heartbeat and the FIFO producer helper.
// The Middy middleware lives at `effectively-once/lambda/middy`. The SQS SDK is loaded only when a
// heartbeat first extends a message or a FIFO message is sent.
export * from "./errors.js";
export * from "./fifo-producer.js";
export * from "./handlers.js";
export type {
  DeliveryReport,
  DeliveryStatus,
  EventReport,
  InvocationReport,
  InvocationResult,
  StreamBatchResponse,
  Trigger,
} from "./invocation.js";
export type {
  AnyHandledEvent,
  ApplyEventHandler,
  ApplyHandlerContext,
  DeliveryContext,
  DerivableEvent,
  Derivation,
  EffectivelyOnceApplyOptions,
  EffectivelyOnceOptions,
  EventHandler,
  HandledEvent,
  HandlerContext,
  HandlerOf,
  OptionsOf,
  PositionValue,
  StreamOptionsOf,
  StreamRecordEvent,
  WrapperMode,
  WrapperOptions,
} from "./options.js";
export * from "./visibility-heartbeat.js";
