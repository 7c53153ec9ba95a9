import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { KinesisRecordEvent } from "../core/event.js";
import { requireKeyText } from "../core/key-text.js";
import { join, requireString } from "./fields.js";
import { nameFromArn, requireEpochSeconds } from "./stream-record.js";
import { parseStreamRecord, type StreamRecordKind } from "./stream-unit.js";
import type { DeliveryUnit, ResolvedParseOptions } from "./types.js";

/** Strict base64 (Buffer.from would skip what is not base64 and decode the rest). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `shardId-000000000006:49590338271490256608559692538361571095921575989136588898`. */
const EVENT_ID = /^(shardId-[^:]+):(\d+)$/;

/** A Kinesis record: its shard in the eventID, its data base64 (and JSON when it is). */
const KINESIS: StreamRecordKind<KinesisRecordEvent> = {
  envelope: "kinesis",
  dataField: "kinesis",
  sequenceField: "sequenceNumber",
  shardId: (h) => shardOf(h.eventId, h.sequenceNumber, join(h.path, "eventID")),
  event(h) {
    const { data: k, dataPath } = h;
    const event: KinesisRecordEvent = {
      kind: "kinesis",
      streamName: nameFromArn(h.arn, "kinesis", "stream", join(h.path, "eventSourceARN")),
      partitionKey: requireKeyText(
        "subject",
        requireString(k, "partitionKey", dataPath),
        join(dataPath, "partitionKey"),
      ),
      sequenceNumber: h.sequenceNumber,
      position: h.position,
      data: new Uint8Array(0),
      approximateArrivalTimestamp: requireEpochSeconds(k, "approximateArrivalTimestamp", dataPath),
    };
    withData(event, k.data, join(dataPath, "data"));
    return event;
  },
};

/**
 * One Kinesis record → one delivery unit (the unit of Lambda's checkpoint). Never throws for bad input: a malformed
 * record becomes a unit with `error`; the correlation id is the eventID.
 */
export function parseKinesisRecord(
  record: unknown,
  recordIndex: number,
  options: ResolvedParseOptions,
): DeliveryUnit {
  return parseStreamRecord(KINESIS, record, recordIndex, options);
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
