import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { Delivery, KinesisRecordEvent } from "../core/event.js";
import { requireKeyText } from "../core/key-text.js";
import { index, join, requireField, requireObject, requireString } from "./fields.js";
import { nameFromArn, requireEpochSeconds, requireSequenceNumber, streamDelivery } from "./stream-record.js";
import type { DeliveryUnit, ResolvedParseOptions } from "./types.js";
import { finishUnit } from "./unit.js";

/** Strict base64 (Buffer.from would skip what is not base64 and decode the rest). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `shardId-000000000006:49590338271490256608559692538361571095921575989136588898`. */
const EVENT_ID = /^(shardId-[^:]+):(\d+)$/;

/**
 * One Kinesis record → one delivery unit (the unit of Lambda's checkpoint). Never throws for bad input: a malformed
 * record becomes a unit with `error`; the correlation id is the eventID.
 */
export function parseKinesisRecord(
  record: unknown,
  recordIndex: number,
  options: ResolvedParseOptions,
): DeliveryUnit {
  const path = index("Records", recordIndex);
  const delivery: Delivery = { envelope: "kinesis", correlationId: path, recordIndex };
  let eventId: string | undefined;
  try {
    const r = requireObject(record, path);
    eventId = requireString(r, "eventID", path);
    const arn = requireString(r, "eventSourceARN", path);
    const kinesisPath = join(path, "kinesis");
    const k = requireField(r, "kinesis", path);
    const { sequenceNumber, position } = requireSequenceNumber(k, "sequenceNumber", kinesisPath);
    const shardId = shardOf(eventId, sequenceNumber, join(path, "eventID"));
    delivery.stream = streamDelivery(arn, sequenceNumber, shardId);
    const event: KinesisRecordEvent = {
      kind: "kinesis",
      streamName: nameFromArn(arn, "kinesis", "stream", join(path, "eventSourceARN")),
      partitionKey: requireKeyText(
        "subject",
        requireString(k, "partitionKey", kinesisPath),
        join(kinesisPath, "partitionKey"),
      ),
      sequenceNumber,
      position,
      data: new Uint8Array(0),
      approximateArrivalTimestamp: requireEpochSeconds(k, "approximateArrivalTimestamp", kinesisPath),
    };
    withData(event, k.data, join(kinesisPath, "data"));
    return finishUnit(delivery, [event], undefined, eventId, options);
  } catch (e) {
    if (!(e instanceof MalformedEventError)) throw e;
    return finishUnit(delivery, [], e, eventId, options);
  }
}

/** The shard in the eventID; its sequence number must be the record's (a mismatch is a hand-made or broken record). */
function shardOf(eventId: string, sequenceNumber: string, path: string): string {
  const m = EVENT_ID.exec(eventId);
  if (!m || m[2] !== sequenceNumber) {
    throw new MalformedEventError(
      `expected shardId-<id>:<the record's sequence number>, got ${describeValue(eventId)}`,
      path,
    );
  }
  return m[1] as string;
}

/** `data` decoded, and its JSON when it is UTF-8 JSON text (`json` is then an own property, `null` included). */
function withData(event: KinesisRecordEvent, data: unknown, path: string): void {
  if (typeof data !== "string" || !BASE64.test(data)) {
    throw new MalformedEventError(`expected base64 data, got ${describeValue(data)}`, path);
  }
  const bytes = new Uint8Array(Buffer.from(data, "base64"));
  event.data = bytes;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return; // not UTF-8: binary data, no JSON
  }
  try {
    event.json = JSON.parse(text);
  } catch {
    // not JSON: the bytes are the data
  }
}
