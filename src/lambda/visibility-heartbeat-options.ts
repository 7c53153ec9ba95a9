import type { SQSClient } from "@aws-sdk/client-sqs";
import { func, integer, optionsRule, required, resolveOptions, schemaFor } from "../core/options.js";

/**
 * Keeps the SQS messages of a batch invisible while they are processed, so that a handler that outlives
 * the queue's visibility timeout is not handed to a second consumer meanwhile (the duplicate the guard
 * would otherwise have to catch). Every `intervalSeconds` it sets the visibility of every message still in
 * progress to `visibilityTimeoutSeconds` from now, with ChangeMessageVisibilityBatch (up to 10 receipt
 * handles per request, per queue). The first extension comes after one interval, so short handlers cost
 * no request. A message whose extension is refused (receipt handle no longer valid, 12-hour limit) is
 * dropped from the heartbeat and reported; a failed request is reported and retried on the next tick.
 */
export interface VisibilityHeartbeatOptions {
  /** Each extension hides the message this long from now. At most 43 200 (12 hours, SQS's limit). */
  visibilityTimeoutSeconds: number;
  /** Time between extensions; must be below visibilityTimeoutSeconds (and below the queue's timeout). */
  intervalSeconds: number;
  /**
   * Queue URL of an event source ARN. Default: under the SQS endpoint the SDK is configured with
   * (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`, or the client's own `endpoint`), as local servers name
   * queues (`<endpoint>/<account>/<name>`); without one, the AWS URL (`queueUrlFromArn`).
   */
  queueUrl?: (eventSourceArn: string) => string;
}

/** The heartbeat's options with their defaults filled in. */
export type ResolvedVisibilityHeartbeatOptions = Omit<Required<VisibilityHeartbeatOptions>, "queueUrl"> &
  Pick<VisibilityHeartbeatOptions, "queueUrl">;

/** A message whose visibility the heartbeat extends. */
export interface HeartbeatMessage {
  messageId: string;
  receiptHandle: string;
  eventSourceArn: string;
  /** Passed back in reports, to log with the delivery's correlation id. */
  correlationId?: string;
}

/** An extension that failed, for logs. */
export interface HeartbeatProblem {
  message?: HeartbeatMessage;
  /** `refused`: SQS refused this message's extension (dropped); `request`: the whole request failed (retried). */
  kind: "refused" | "request";
  code?: string;
  error?: unknown;
}

/** The part of an SQS client the heartbeat uses. */
export type SqsSender = Pick<SQSClient, "send">;

/** What the heartbeat needs besides its options. */
export interface VisibilityHeartbeatDeps {
  /** The client, or a factory (called on the first extension, so quick batches never load the SQS SDK). */
  client: SqsSender | (() => SqsSender | Promise<SqsSender>);
  /** Called for each failed extension (its errors are ignored). */
  onProblem?: (problem: HeartbeatProblem) => void;
}

const MAX_VISIBILITY_SECONDS = 43_200;

const VISIBILITY_HEARTBEAT_OPTIONS = schemaFor<VisibilityHeartbeatOptions>()({
  visibilityTimeoutSeconds: required(integer({ min: 1, max: MAX_VISIBILITY_SECONDS })),
  intervalSeconds: required(integer({ min: 1 })),
  queueUrl: func<(eventSourceArn: string) => string>({ expected: "a function (eventSourceArn) => url" }),
});

/** The option names of `visibilityHeartbeat`. */
export const VISIBILITY_HEARTBEAT_KEYS = Object.keys(
  VISIBILITY_HEARTBEAT_OPTIONS,
) as readonly (keyof VisibilityHeartbeatOptions)[];

/** Checks the heartbeat's options and fills in the defaults; `what` names the caller in `OptionsError`. */
export function resolveVisibilityHeartbeatOptions(
  what: string,
  options: VisibilityHeartbeatOptions,
): ResolvedVisibilityHeartbeatOptions {
  const o = resolveOptions(`${what}: visibilityHeartbeat`, VISIBILITY_HEARTBEAT_OPTIONS, options);
  optionsRule(
    what,
    o.intervalSeconds < o.visibilityTimeoutSeconds,
    `visibilityHeartbeat.intervalSeconds (${o.intervalSeconds}) must be below visibilityTimeoutSeconds ` +
      `(${o.visibilityTimeoutSeconds}), or the message reappears between two extensions`,
  );
  return {
    visibilityTimeoutSeconds: o.visibilityTimeoutSeconds,
    intervalSeconds: o.intervalSeconds,
    ...(o.queueUrl ? { queueUrl: o.queueUrl } : {}),
  };
}

/** One batch's heartbeat, from `VisibilityHeartbeat.start`. */
export interface HeartbeatRun {
  /** The message is finished (acknowledged or failed): stop extending it. */
  done(messageId: string): void;
  /** Stops the timer and aborts a request in flight. Always call it (in `finally`). */
  stop(): Promise<void>;
  /** Extensions SQS accepted so far (for tests and logs). */
  readonly extended: number;
}
