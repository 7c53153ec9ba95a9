import { EffectivelyOnceError } from "../core/errors.js";
import type { Destination, OutboxEntry } from "./types.js";

/**
 * A send of an outbox entry that failed: the destination did not take the message (or may not have). The relay
 * leaves the entry claimed and sends it again, with the same message id, once its lease runs out; `cause` is the
 * client's error when there was one.
 */
export class OutboxSendError extends EffectivelyOnceError {
  readonly messageId: string;
  readonly destination: Destination;
  constructor(entry: OutboxEntry, message: string, options?: { cause?: unknown }) {
    super(
      `outbox message ${entry.messageId} to ${describeDestination(entry.destination)}: ${message}`,
      options,
    );
    this.messageId = entry.messageId;
    this.destination = entry.destination;
  }
}

/** PutEvents answered but did not take the event (a non-zero FailedEntryCount): EventBridge's code and message. */
export class EventBridgeEntryFailedError extends OutboxSendError {
  readonly errorCode: string | undefined;
  readonly errorMessage: string | undefined;
  constructor(entry: OutboxEntry, errorCode: string | undefined, errorMessage: string | undefined) {
    super(entry, `PutEvents failed the entry: ${errorCode ?? "no error code"}: ${errorMessage ?? ""}`);
    this.errorCode = errorCode;
    this.errorMessage = errorMessage;
  }
}

/**
 * The entry cannot be sent as it is, on any try: an EventBridge body that is not a JSON object, more attributes
 * than SQS and SNS take. `ctx.publish` refuses such messages; this is for entries that did not come through it.
 */
export class OutboxEntryInvalidError extends OutboxSendError {}

function describeDestination(d: Destination): string {
  switch (d.kind) {
    case "sqs":
      return `SQS ${d.queueUrl}`;
    case "sns":
      return `SNS ${d.topicArn}`;
    case "eventbridge":
      return `EventBridge bus ${d.eventBusName}`;
    default:
      return `an unknown destination ${JSON.stringify((d as { kind?: unknown })?.kind)}`;
  }
}
