import { describeValue } from "../core/describe-value.js";
import { MalformedEventError } from "../core/errors.js";
import type { DynamoDBChangeEvent, DynamoDBChangeName, DynamoDBStreamViewType } from "../core/event.js";
import { requireKeyText } from "../core/key-text.js";
import { canonicalKeys, unmarshallImage } from "./dynamodb-attributes.js";
import { isObject, type JsonObject, join, own } from "./fields.js";
import { nameFromArn, requireEpochSeconds } from "./stream-record.js";
import { parseStreamRecord, type StreamRecordKind } from "./stream-unit.js";
import type { DeliveryUnit, ResolvedParseOptions } from "./types.js";

const CHANGES: readonly DynamoDBChangeName[] = ["INSERT", "MODIFY", "REMOVE"];
const VIEW_TYPES: readonly DynamoDBStreamViewType[] = [
  "KEYS_ONLY",
  "NEW_IMAGE",
  "OLD_IMAGE",
  "NEW_AND_OLD_IMAGES",
];

/** Who deletes an item whose TTL expired: DynamoDB documents this userIdentity on those REMOVE records. */
const TTL_PRINCIPAL = "dynamodb.amazonaws.com";

/** A DynamoDB Streams record: an item's change, its keys and images in DynamoDB JSON. */
const DYNAMODB_STREAMS: StreamRecordKind<DynamoDBChangeEvent> = {
  envelope: "dynamodb-streams",
  dataField: "dynamodb",
  sequenceField: "SequenceNumber",
  event(h) {
    const { record: r, data: d, dataPath: ddbPath, path, arn } = h;
    const eventName = oneOf(r, "eventName", CHANGES, path);
    const tableName = requireKeyText(
      "subject",
      nameFromArn(arn, "dynamodb", "table", join(path, "eventSourceARN")),
      join(path, "eventSourceARN"),
    );
    const event: DynamoDBChangeEvent = {
      kind: "dynamodb",
      eventName,
      tableName,
      keys: unmarshallImage(own(d, "Keys"), join(ddbPath, "Keys")),
      viewType: oneOf(d, "StreamViewType", VIEW_TYPES, ddbPath),
      sequenceNumber: h.sequenceNumber,
      position: h.position,
      removal: eventName === "REMOVE",
      ttlExpired: eventName === "REMOVE" && isTtlDelete(own(r, "userIdentity")),
      item: `${tableName}/${canonicalKeys(own(d, "Keys"), join(ddbPath, "Keys"))}`,
      eventId: h.eventId,
    };
    if (own(d, "ApproximateCreationDateTime") !== undefined) {
      event.approximateCreationDateTime = requireEpochSeconds(d, "ApproximateCreationDateTime", ddbPath);
    }
    const newImage = optionalImage(d, "NewImage", ddbPath);
    const oldImage = optionalImage(d, "OldImage", ddbPath);
    if (newImage) event.newImage = newImage;
    if (oldImage) event.oldImage = oldImage;
    return event;
  },
};

/**
 * One DynamoDB Streams record → one delivery unit (the unit of Lambda's checkpoint). Never throws for bad input: a
 * malformed record becomes a unit with `error`; the correlation id is the eventID.
 */
export function parseDynamoDBStreamRecord(
  record: unknown,
  recordIndex: number,
  options: ResolvedParseOptions,
): DeliveryUnit {
  return parseStreamRecord(DYNAMODB_STREAMS, record, recordIndex, options);
}

function oneOf<T extends string>(obj: JsonObject, field: string, allowed: readonly T[], path: string): T {
  const value = own(obj, field);
  if (!allowed.includes(value as T)) {
    throw new MalformedEventError(
      `expected one of ${allowed.join(", ")}, got ${value === undefined ? "nothing" : describeValue(value)}`,
      join(path, field),
    );
  }
  return value as T;
}

function optionalImage(d: JsonObject, field: string, path: string): Record<string, unknown> | undefined {
  const value = own(d, field);
  return value === undefined || value === null ? undefined : unmarshallImage(value, join(path, field));
}

/** `userIdentity: { type: "Service", principalId: "dynamodb.amazonaws.com" }`: a delete by TTL. */
function isTtlDelete(identity: unknown): boolean {
  return (
    isObject(identity) &&
    own(identity, "type") === "Service" &&
    own(identity, "principalId") === TTL_PRINCIPAL
  );
}
