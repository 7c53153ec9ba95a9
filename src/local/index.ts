/**
 * The local runtime: DynamoDB Local, s3rver and fauxqs on 127.0.0.1, S3 notifications, delivery with faults,
 * a Lambda runner.
 * @module effectively-once/local
 */
// The local runtime: real protocol servers on 127.0.0.1 (DynamoDB Local, s3rver, fauxqs), faithful S3
// notifications, delivery with seedable faults, a Lambda runner. Dev dependencies only; see docs/local-runtime.md.
// An explicit list: what a test or a script driving the runtime needs. The emulators' start functions, the
// simulation's internals (sleeper, activity) and the CLI's `run`/`demo` machinery stay internal.

export {
  type DeliveryFaults,
  FaultInjector,
  type FaultOptions,
  NO_FAULTS,
  NO_RUN_FAULTS,
  type ResolvedFaults,
  type RunFaults,
  resolveFaults,
} from "../sim/live/faults.js";
export { instrumentStore } from "../sim/live/instrumented-store.js";
export {
  type GuardStep,
  type RunStatus,
  type SourceKind,
  Trace,
  type TraceEvent,
  type TraceListener,
} from "../sim/live/trace.js";
export { createPrng, type Prng } from "../sim/prng.js";
export { type AsyncInvokeOptions, AsyncInvoker, type FailedAsyncEvent } from "./delivery/async-invoke.js";
export {
  BucketNotifications,
  type BucketRouteOptions,
  type NotificationFilter,
  type NotificationRoute,
} from "./delivery/bucket-notifications.js";
export { type S3EventBridgeEvent, toEventBridgeEvent } from "./delivery/eventbridge-envelope.js";
export type { HandlerOutcome, HandlerOutcomes } from "./delivery/handler-outcomes.js";
export {
  currentInvocation,
  faultPoint,
  type InvocationScope,
  invocationSignal,
} from "./delivery/invocation-scope.js";
export { createLambdaContext, type LocalContextOptions } from "./delivery/lambda-context.js";
export {
  type AnyLambdaHandler,
  InjectedFailure,
  LocalFunction,
  type LocalFunctionOptions,
  type LocalInvocationResult,
  RuntimeStoppedError,
} from "./delivery/local-function.js";
export { S3NotificationFactory, type S3NotificationFactoryOptions } from "./delivery/s3-notifications.js";
export { SqsEventSource, type SqsEventSourceOptions, toLambdaRecord } from "./delivery/sqs-event-source.js";
export {
  type DiscardedBatch,
  StreamEventSource,
  type StreamEventSourceOptions,
} from "./delivery/stream-event-source.js";
export type { ReadRecord, ShardRead, StreamReader, StreamShard } from "./delivery/stream-reader.js";
export type {
  Charge,
  ChargeRequest,
  LocalPaymentsServer,
  PaymentsFaults,
  PaymentsOutcome,
  PaymentsRequestRecord,
} from "./emulators/payments-server.js";
export { scanTable } from "./emulators/scan-table.js";
export {
  type IdleOptions,
  type LocalQueue,
  LocalRuntime,
  type LocalRuntimeOptions,
  type QueueOptions,
} from "./runtime.js";

/** @deprecated Renamed `AnyLambdaHandler` (the wrappers' `LambdaHandler` is another type); removed in 0.3. */
export type LambdaHandler = import("./delivery/local-function.js").AnyLambdaHandler;
/**
 * @deprecated Renamed `LocalInvocationResult` (`eonce run` and the simulator have runs of their own); removed in the
 * next minor version.
 */
export type RunResult = import("./delivery/local-function.js").LocalInvocationResult;
