import type {
  Context,
  DynamoDBStreamEvent,
  EventBridgeEvent,
  KinesisStreamEvent,
  S3Event,
  SQSBatchResponse,
  SQSEvent,
} from "aws-lambda";
import { OptionsError } from "../core/errors.js";
import type { DynamoDBChangeEvent, KinesisRecordEvent } from "../core/event.js";
import { reportToLocalRun } from "../observe/local-hook.js";
import { ANY_TRIGGER } from "./any-trigger.js";
import {
  type AnyEventHandler,
  type InvocationReport,
  type InvocationResult,
  InvocationRunner,
  type StreamBatchResponse,
  type Trigger,
} from "./invocation.js";
import {
  type AnyHandledEvent,
  type HandlerOf,
  type OptionsOf,
  resolveOptions,
  type StreamOptionsOf,
  type StreamRecordEvent,
  type WrapperMode,
  type WrapperOptions,
} from "./options.js";
import { S3_TRIGGER } from "./s3-trigger.js";
import type { TriggerKit } from "./trigger-kit.js";

/**
 * Handler wrappers: the user writes a handler for one event; the wrapper parses the invocation, runs the
 * guard per event (mode `run`: claim, lease, commit or release; mode `apply`: the handler computes its atomic
 * writes, then one request claims, writes and commits), logs and counts every outcome, and answers Lambda:
 *
 * - SQS (`sqsHandler`): `{ batchItemFailures }` (enable ReportBatchItemFailures on the event source
 *   mapping). Duplicates, stale events and `s3:TestEvent` succeed; busy/in-flight after the policy,
 *   handler failures and malformed messages are reported as failures (malformed ones reach the DLQ via
 *   the redrive policy).
 * - Direct S3 notifications and EventBridge (`s3Handler`, `eventBridgeHandler`; asynchronous invokes):
 *   a failed record throws DeliveryFailedError so that Lambda retries; duplicates, stale events and
 *   malformed records succeed (malformed ones are logged and counted: Lambda's 2 retries of the same bytes
 *   cannot help).
 * - Kinesis and DynamoDB Streams (`kinesisHandler`, `dynamodbStreamHandler`): `{ batchItemFailures }` with the first
 *   failed record's sequence number, where Lambda resumes the shard (enable ReportBatchItemFailures); records of a
 *   subject run in order and none after its first failure; malformed records are acknowledged and counted (failing
 *   them would block the shard until the retries run out, and the same bytes cannot succeed).
 */
export type LambdaHandler<E, R> = (event: E, context: Context) => Promise<R>;

/** The S3 test event S3 sends when a notification configuration is saved. */
export interface S3TestEventPayload {
  Service: "Amazon S3";
  Event: "s3:TestEvent";
  Time: string;
  Bucket: string;
  RequestId: string;
  HostId: string;
}

/**
 * A Lambda handler for SQS batches (S3 notifications, SNS-in-SQS, EventBridge-in-SQS or your messages): each
 * event through the guard, failures reported per message (`batchItemFailures`).
 */
export function sqsHandler<R = unknown, M extends WrapperMode = "run">(
  handler: HandlerOf<M, R>,
  options: OptionsOf<M> & { mode?: M },
): LambdaHandler<SQSEvent, SQSBatchResponse> {
  const run = make<R>("sqsHandler", handler, options, ANY_TRIGGER);
  return async (event, context) => {
    const result = await run(event, context, "sqs");
    if (result.kind !== "sqs") throw new OptionsError("sqsHandler: not an SQS batch"); // unreachable: run checks
    reportToLocalRun(result.report);
    return result.response;
  };
}

/**
 * A Lambda handler for S3 notifications invoked directly: each record through the guard; a failed record
 * makes it throw (`DeliveryFailedError`), so Lambda retries the invocation.
 */
export function s3Handler<R = unknown, M extends WrapperMode = "run">(
  handler: HandlerOf<M, R>,
  options: OptionsOf<M> & { mode?: M },
): LambdaHandler<S3Event | S3TestEventPayload, InvocationReport<R>> {
  return direct("s3Handler", handler, options, S3_TRIGGER);
}

/**
 * A Lambda handler for EventBridge events (S3 object events, or your own with `messages: "accept"`): the
 * event through the guard; a failure makes it throw (`DeliveryFailedError`), so the invocation is retried.
 */
export function eventBridgeHandler<R = unknown, M extends WrapperMode = "run">(
  handler: HandlerOf<M, R>,
  options: OptionsOf<M> & { mode?: M },
): LambdaHandler<EventBridgeEvent<string, unknown>, InvocationReport<R>> {
  return direct("eventBridgeHandler", handler, options, ANY_TRIGGER);
}

/**
 * A Lambda handler for Kinesis Data Streams batches: each record through the guard (subject the partition key,
 * position the sequence number; docs/sources.md), failures reported as the first failed record's sequence number.
 */
export function kinesisHandler<R = unknown, M extends WrapperMode = "run">(
  handler: HandlerOf<M, R, KinesisRecordEvent>,
  options: StreamOptionsOf<M, KinesisRecordEvent> & { mode?: M },
): LambdaHandler<KinesisStreamEvent, StreamBatchResponse> {
  return stream("kinesisHandler", "kinesis", handler, options);
}

/**
 * A Lambda handler for DynamoDB Streams batches: each change through the guard (subject the table and the item's
 * keys, position the sequence number; docs/sources.md), failures reported as the first failed record's sequence
 * number.
 */
export function dynamodbStreamHandler<R = unknown, M extends WrapperMode = "run">(
  handler: HandlerOf<M, R, DynamoDBChangeEvent>,
  options: StreamOptionsOf<M, DynamoDBChangeEvent> & { mode?: M },
): LambdaHandler<DynamoDBStreamEvent, StreamBatchResponse> {
  return stream("dynamodbStreamHandler", "dynamodb-streams", handler, options);
}

/**
 * Any trigger: the answer follows the invocation (SQS and streams: batch response; direct: report, or a throw). The
 * handler gets every kind of event unless its parameter's type says which (then wire it to those triggers only).
 */
export function wrapHandler<
  R = unknown,
  M extends WrapperMode = "run",
  E extends AnyHandledEvent = AnyHandledEvent,
>(
  handler: HandlerOf<M, R, E>,
  options: OptionsOf<M> & { mode?: M },
): LambdaHandler<unknown, SQSBatchResponse | StreamBatchResponse | InvocationReport<R>> {
  const run = make<R>("wrapHandler", handler, options, ANY_TRIGGER);
  return async (event, context) => answer(await run(event, context, "any"));
}

/** What Lambda gets back for a run: the batch response for SQS and streams, the report for direct invokes. */
export function answer<R>(
  result: InvocationResult<R>,
): SQSBatchResponse | StreamBatchResponse | InvocationReport<R> {
  reportToLocalRun(result.report);
  return result.kind === "direct" ? result.report : result.response;
}

function stream<E extends StreamRecordEvent, R>(
  what: string,
  trigger: "kinesis" | "dynamodb-streams",
  handler: AnyEventHandler<R>,
  options: StreamOptionsOf<WrapperMode, E>,
): LambdaHandler<unknown, StreamBatchResponse> {
  const run = make<R>(
    what,
    handler,
    options as StreamOptionsOf<WrapperMode, StreamRecordEvent>,
    ANY_TRIGGER,
    true,
  );
  return async (event, context) => {
    const result = await run(event, context, trigger);
    if (result.kind !== "stream") throw new OptionsError(`${what}: not a stream batch`); // unreachable: run checks
    reportToLocalRun(result.report);
    return result.response;
  };
}

function direct<E, R>(what: string, handler: AnyEventHandler<R>, options: WrapperOptions, kit: TriggerKit) {
  const run = make<R>(what, handler, options, kit);
  return async (event: E, context: Context): Promise<InvocationReport<R>> =>
    (await run(event, context, "direct")).report;
}

/** Validates the handler and the options once, builds the runner (and its guard), and binds the handler to it. */
function make<R>(
  what: string,
  handler: AnyEventHandler<R>,
  options: WrapperOptions | StreamOptionsOf<WrapperMode, StreamRecordEvent>,
  kit: TriggerKit,
  streams = false,
) {
  if (typeof handler !== "function")
    throw new OptionsError(`${what}: the first argument must be the event handler`);
  const runner = new InvocationRunner(what, resolveOptions(what, options, streams), kit);
  return (event: unknown, context: Context | undefined, trigger: Trigger): Promise<InvocationResult<R>> =>
    runner.run(handler, event, context, trigger);
}
