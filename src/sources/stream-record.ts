import { describeValue } from "../core/describe-value.js";
import { InvalidPositionError, MalformedEventError } from "../core/errors.js";
import type { StreamDelivery } from "../core/event.js";
import { type Position, positionFromSequenceNumber } from "../core/position.js";
import { type JsonObject, join, own, requireString } from "./fields.js";

/**
 * What Kinesis and DynamoDB Streams records share: the sequence number as a position, the name in the event source
 * ARN, epoch-seconds fields, and the refusal of tumbling-window invocations.
 */

/** The fields Lambda adds to a stream invocation with a tumbling window (`TumblingWindowInSeconds`). */
const WINDOW_FIELDS = ["window", "state", "isFinalInvokeForWindow"] as const;

/**
 * A tumbling-window invocation is refused whole: its `state` is an aggregate the function returns to Lambda, outside
 * the guard's commit, so it could not be kept exactly once with the records' effects.
 */
export function refuseTumblingWindow(input: JsonObject): void {
  const field = WINDOW_FIELDS.find((name) => Object.hasOwn(input, name));
  if (field === undefined) return;
  throw new MalformedEventError(
    `tumbling windows are not supported (the invocation carries ${field}): remove TumblingWindowInSeconds ` +
      "from the event source mapping",
    field,
  );
}

/** A required sequence number: decimal digits, as a position (`positionFromSequenceNumber`). */
export function requireSequenceNumber(
  obj: JsonObject,
  field: string,
  path: string,
): { sequenceNumber: string; position: Position } {
  const sequenceNumber = requireString(obj, field, path);
  try {
    return { sequenceNumber, position: positionFromSequenceNumber(sequenceNumber) };
  } catch (cause) {
    if (!(cause instanceof InvalidPositionError)) throw cause;
    throw new MalformedEventError(cause.message, join(path, field), { cause });
  }
}

/** A required finite, non-negative number of seconds (Lambda sends the stream's timestamps as epoch seconds). */
export function requireEpochSeconds(obj: JsonObject, field: string, path: string): number {
  const value = own(obj, field);
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new MalformedEventError(
      `expected epoch seconds (a non-negative number), got ${value === undefined ? "nothing" : describeValue(value)}`,
      join(path, field),
    );
  }
  return value;
}

/**
 * The name in a stream's ARN: `arn:<partition>:<service>:<region>:<account>:<resource>/<name>[/…]`. `resource` is
 * `stream` for Kinesis (a consumer ARN `…:stream/<name>/consumer/<c>:<t>` names its stream too), `table` for
 * DynamoDB.
 */
export function nameFromArn(arn: string, service: string, resource: string, path: string): string {
  const parts = arn.split(":");
  const tail = parts.slice(5).join(":");
  const name = tail.startsWith(`${resource}/`) ? tail.slice(resource.length + 1).split("/")[0] : undefined;
  if (parts[0] !== "arn" || parts[2] !== service || name === undefined || name.length === 0) {
    throw new MalformedEventError(
      `expected an ARN arn:…:${service}:…:${resource}/<name>…, got ${describeValue(arn)}`,
      path,
    );
  }
  return name;
}

/** The delivery metadata of a stream record. */
export function streamDelivery(
  eventSourceArn: string,
  sequenceNumber: string,
  shardId: string | undefined,
): StreamDelivery {
  return shardId === undefined
    ? { eventSourceArn, sequenceNumber }
    : { eventSourceArn, shardId, sequenceNumber };
}
