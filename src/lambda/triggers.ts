import { MalformedEventError } from "../core/errors.js";

/**
 * Which invocations a typed wrapper accepts: `sqs` batches, `direct` S3/EventBridge invokes, `kinesis` or
 * `dynamodb-streams` batches, or `any`.
 */
export type Trigger = "sqs" | "direct" | "kinesis" | "dynamodb-streams" | "any";

/** What each trigger is called in an error, and the wrapper that takes it. */
export const TRIGGERS: Record<Exclude<Trigger, "any">, TriggerName> = {
  sqs: { what: "an SQS batch", wrapper: "sqsHandler" },
  direct: { what: "a direct S3/EventBridge invocation", wrapper: "s3Handler or eventBridgeHandler" },
  kinesis: { what: "a Kinesis batch", wrapper: "kinesisHandler" },
  "dynamodb-streams": { what: "a DynamoDB Streams batch", wrapper: "dynamodbStreamHandler" },
};

/** An invocation as an error names it, and the wrapper that takes it. */
export interface TriggerName {
  what: string;
  wrapper: string;
}

/** A wrapper got an invocation of another trigger: a configuration error, thrown as malformed input. */
export function wrongTrigger(what: string, got: TriggerName): MalformedEventError {
  return new MalformedEventError(
    `${what} got ${got.what}; use ${got.wrapper} (or wrapHandler, which takes every trigger)`,
    "",
  );
}
