// The local runtime: real protocol servers on 127.0.0.1 (DynamoDB Local, s3rver, fauxqs), faithful S3
// notifications, delivery with seedable faults, a Lambda runner. Dev dependencies only; see docs/local-runtime.md.
export * from "./async-invoke.js";
export * from "./bucket-notifications.js";
export * from "./eventbridge-envelope.js";
export * from "./faults.js";
export * from "./instrumented-store.js";
export { currentInvocation, faultPoint, type InvocationScope, invocationSignal } from "./invocation-scope.js";
export * from "./lambda-context.js";
export {
  InjectedFailure,
  type LambdaHandler,
  LocalFunction,
  type LocalFunctionOptions,
  type RunResult,
  RuntimeStoppedError,
} from "./lambda-runner.js";
export * from "./prng.js";
export {
  type IdleOptions,
  type LocalQueue,
  LocalRuntime,
  type LocalRuntimeOptions,
  type QueueOptions,
} from "./runtime.js";
export * from "./s3-notifications.js";
export * from "./scan-table.js";
export * from "./sqs-event-source.js";
export * from "./trace.js";
