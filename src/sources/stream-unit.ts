import type { NormalizedEvent } from "../core/event.js";
import type { Position } from "../core/position.js";
import { type JsonObject, join, requireField, requireObject, requireString } from "./fields.js";
import { requireSequenceNumber, streamDelivery } from "./stream-record.js";
import type { DeliveryUnit, ResolvedParseOptions } from "./types.js";
import { recordDelivery, unitOf } from "./unit.js";

/** The fields every Kinesis and DynamoDB Streams record has, read and checked. */
export interface StreamRecordHead {
  /** `Records[<i>]`. */
  path: string;
  record: JsonObject;
  eventId: string;
  arn: string;
  /** The service's object (`kinesis`, `dynamodb`) and its path. */
  data: JsonObject;
  dataPath: string;
  sequenceNumber: string;
  position: Position;
}

/** How one kind of stream record is read after its head. */
export interface StreamRecordKind<E extends NormalizedEvent> {
  envelope: "kinesis" | "dynamodb-streams";
  /** The service's object in the record, and the name of its sequence number field. */
  dataField: string;
  sequenceField: string;
  /** The shard in the record, when the record names it (checked before the delivery is recorded). */
  shardId?(head: StreamRecordHead): string;
  event(head: StreamRecordHead): E;
}

/**
 * One stream record → one delivery unit (the unit of Lambda's checkpoint). Never throws for bad input: a malformed
 * record becomes a unit with `error`; the correlation id is the eventID.
 */
export function parseStreamRecord<E extends NormalizedEvent>(
  kind: StreamRecordKind<E>,
  record: unknown,
  recordIndex: number,
  options: ResolvedParseOptions,
): DeliveryUnit {
  const { path, delivery } = recordDelivery(kind.envelope, recordIndex);
  let eventId: string | undefined;
  return unitOf(
    delivery,
    options,
    () => {
      const r = requireObject(record, path);
      eventId = requireString(r, "eventID", path);
      const arn = requireString(r, "eventSourceARN", path);
      const dataPath = join(path, kind.dataField);
      const data = requireField(r, kind.dataField, path);
      const { sequenceNumber, position } = requireSequenceNumber(data, kind.sequenceField, dataPath);
      const head: StreamRecordHead = {
        path,
        record: r,
        eventId,
        arn,
        data,
        dataPath,
        sequenceNumber,
        position,
      };
      delivery.stream = streamDelivery(arn, sequenceNumber, kind.shardId?.(head));
      return { events: [kind.event(head)], correlationId: eventId };
    },
    () => eventId,
  );
}
