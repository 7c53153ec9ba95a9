import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { Delivery } from "../core/event.js";
import { parseDynamoDBStreamRecord } from "./dynamodb-stream.js";
import { isEventBridgeEvent } from "./eventbridge.js";
import { describe, isObject, type JsonObject } from "./fields.js";
import { parseKinesisRecord } from "./kinesis.js";
import { resolveParseOptions } from "./options.js";
import { directS3Record, directTestEvent } from "./parse-s3.js";
import { eventBridgePayload } from "./payload.js";
import { isS3TestEvent } from "./s3-notification.js";
import { parseSqsRecord } from "./sqs.js";
import { refuseTumblingWindow } from "./stream-record.js";
import type { DeliveryUnit, ParseOptions, ResolvedParseOptions } from "./types.js";
import { unitOf } from "./unit.js";

const KNOWN_SHAPES =
  "expected an S3 notification (Records[].eventSource aws:s3), an SQS event (Records[].eventSource aws:sqs), " +
  "a Kinesis or DynamoDB Streams batch (aws:kinesis, aws:dynamodb), an s3:TestEvent or an EventBridge event";

/** Stream sources: a batch of one shard, every record parsed as the batch's source. */
const STREAM_PARSERS = {
  "aws:kinesis": parseKinesisRecord,
  "aws:dynamodb": parseDynamoDBStreamRecord,
} as const;

/**
 * Turns a Lambda invocation payload into delivery units, auto-detecting the envelope: direct S3
 * notification, `s3:TestEvent`, SQS event (bodies: S3 notification, SNS envelope, EventBridge event or
 * application message), EventBridge event, Kinesis or DynamoDB Streams batch (one unit per record).
 *
 * Bad records and bodies never throw: they come back as units with `error`. Only input that is no
 * known invocation at all throws MalformedEventError (nothing in it can be acknowledged one by one), as does a
 * stream batch with a tumbling window (not supported), and invalid options throw OptionsError.
 */
export function parseInvocation(input: unknown, options?: ParseOptions): DeliveryUnit[] {
  return parseResolved(input, resolveParseOptions(options));
}

/** `parseInvocation` with options resolved once (the wrappers resolve theirs when they are built). */
export function parseResolved(input: unknown, resolved: ResolvedParseOptions): DeliveryUnit[] {
  if (!isObject(input)) {
    throw new MalformedEventError(`invocation is ${describe(input)}, not an object; ${KNOWN_SHAPES}`, "");
  }
  // The test event first: one that also carries Records is one malformed unit, not a batch (see parseS3TestEvent).
  if (isS3TestEvent(input)) return [directTestEvent(input, resolved)];
  if (Object.hasOwn(input, "Records")) return parseRecords(input, resolved);
  if (isEventBridgeEvent(input)) return [directEventBridge(input, resolved)];
  throw new MalformedEventError(`unknown invocation shape; ${KNOWN_SHAPES}`, "");
}

function parseRecords(input: JsonObject, options: ResolvedParseOptions): DeliveryUnit[] {
  const records = input.Records;
  if (!Array.isArray(records)) {
    throw new MalformedEventError(`expected an array, got ${describe(records)}; ${KNOWN_SHAPES}`, "Records");
  }
  if (records.length === 0) throw new MalformedEventError("Records is empty", "Records");
  const sources = records.map((r) => (isObject(r) ? (r.eventSource ?? r.EventSource) : undefined));
  const batchSource = sources.find((s) => s === "aws:sqs" || s === "aws:s3");
  if (batchSource === undefined) {
    const stream = sources.find(
      (s): s is keyof typeof STREAM_PARSERS => typeof s === "string" && Object.hasOwn(STREAM_PARSERS, s),
    );
    if (stream !== undefined) {
      refuseTumblingWindow(input);
      const parse = STREAM_PARSERS[stream];
      return records.map((record, i) => parse(record, i, options));
    }
    throw new MalformedEventError(
      `no record has eventSource aws:s3, aws:sqs, aws:kinesis or aws:dynamodb (first: ${describeValue(sources[0])}); ` +
        `${KNOWN_SHAPES} (SNS → Lambda is not supported: subscribe an SQS queue to the topic)`,
      "Records",
    );
  }
  return records.map((record, i) => {
    // Lambda never mixes sources in one batch; a stray record is reported in the batch's envelope.
    const source = sources[i] === "aws:sqs" || sources[i] === "aws:s3" ? sources[i] : batchSource;
    return source === "aws:sqs" ? parseSqsRecord(record, i, options) : directS3Record(record, i, options);
  });
}

function directEventBridge(input: JsonObject, options: ResolvedParseOptions): DeliveryUnit {
  const id = typeof input.id === "string" ? input.id : "";
  const delivery: Delivery = { envelope: "eventbridge", correlationId: id || "eventbridge", recordIndex: 0 };
  return unitOf(delivery, options, () => eventBridgePayload(input, "", delivery, id, options));
}
