import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { MalformedEventError } from "../../core/errors.js";
import type { Destination, OutboxEntry } from "../../outbox/types.js";
import { type Item, N, S } from "./expressions.js";
import { OUTBOX_ATTRIBUTES, OUTBOX_PENDING_INDEX, OUTBOX_UNSENT_INDEX } from "./outbox-names.js";
import { setUpTable } from "./table-setup.js";

/**
 * The outbox table (`DynamoDBOutbox`), one item per entry:
 *
 * | attribute     | type | meaning                                                                          |
 * |---------------|------|----------------------------------------------------------------------------------|
 * | subject       | S    | partition key: the publishing event's subject                                    |
 * | order         | S    | sort key: the entry's `order`, `#`, its message id (commit order, then unique)    |
 * | messageId     | S    | the message's id                                                                 |
 * | destination   | S    | the destination as JSON                                                          |
 * | body          | S    | the message                                                                      |
 * | groupId       | S    | FIFO message group                                                               |
 * | attributes    | M    | message attributes (strings), if any                                             |
 * | createdAtMs   | N    | the commit's time                                                                |
 * | unsent        | S    | = order, present only until sent: the sparse LSI `unsentBySubject` (subject, unsent) |
 * | pendingBucket | S    | present only until sent: the sparse GSI `pending` (pendingBucket, createdAtMs)    |
 * | leaseOwner    | S    | the polling relay that holds the entry                                           |
 * | leaseUntilMs  | N    | until when it holds it                                                           |
 * | sentAtMs      | N    | when a relay marked it sent                                                      |
 * | expiresAt     | N    | TTL (epoch seconds), set when sent: an unsent entry never expires                |
 *
 * The sort key carries the message id because `order` alone is not unique within a subject: unordered events of one
 * subject each have their own state (and fence). The stream (NEW_IMAGE) feeds `outboxStreamHandler`; the indexes
 * serve the polling relay (`DynamoDBOutbox.claim`). CloudFormation (AWS::DynamoDB::Table): KeySchema subject HASH,
 * order RANGE; AttributeDefinitions subject S, order S, unsent S, pendingBucket S, createdAtMs N;
 * LocalSecondaryIndexes [unsentBySubject: subject HASH, unsent RANGE, Projection ALL]; GlobalSecondaryIndexes
 * [pending: pendingBucket HASH, createdAtMs RANGE, Projection INCLUDE leaseUntilMs]; StreamSpecification
 * NEW_IMAGE; TimeToLiveSpecification expiresAt. An LSI can only be made with the table.
 */
export { OUTBOX_ATTRIBUTES, OUTBOX_PENDING_INDEX, OUTBOX_UNSENT_INDEX } from "./outbox-names.js";

/** The options of `createOutboxTable`. */
export interface CreateOutboxTableOptions {
  tableName: string;
  /** Enable TTL on `expiresAt` (sent entries only). Default true. */
  ttl?: boolean;
}

/** Creates the outbox table if it does not exist (local use and tests; the shape to deploy is documented above). */
export async function createOutboxTable(
  client: DynamoDBClient,
  options: CreateOutboxTableOptions,
): Promise<void> {
  const a = OUTBOX_ATTRIBUTES;
  const hash = (name: string) => ({ AttributeName: name, KeyType: "HASH" as const });
  const range = (name: string) => ({ AttributeName: name, KeyType: "RANGE" as const });
  const ttl = (options.ttl ?? true) ? a.expiresAt : undefined;
  await setUpTable(
    client,
    {
      TableName: options.tableName,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: a.subject, AttributeType: "S" },
        { AttributeName: a.order, AttributeType: "S" },
        { AttributeName: a.unsent, AttributeType: "S" },
        { AttributeName: a.pendingBucket, AttributeType: "S" },
        { AttributeName: a.createdAtMs, AttributeType: "N" },
      ],
      KeySchema: [hash(a.subject), range(a.order)],
      LocalSecondaryIndexes: [
        {
          IndexName: OUTBOX_UNSENT_INDEX,
          KeySchema: [hash(a.subject), range(a.unsent)],
          Projection: { ProjectionType: "ALL" },
        },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: OUTBOX_PENDING_INDEX,
          KeySchema: [hash(a.pendingBucket), range(a.createdAtMs)],
          Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: [a.leaseUntilMs] },
        },
      ],
      StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_IMAGE" },
    },
    ttl,
  );
}

/**
 * The partition key of a subject's entries: `#` and the subject. DynamoDB refuses an empty string as a key value, and
 * the guard takes an empty subject; every read and write of the table goes through this.
 */
export function outboxPartitionKey(subject: string): string {
  return `#${subject}`;
}

/** The subject of a partition key (`outboxPartitionKey`); `MalformedEventError` for another value. */
function subjectOfPartitionKey(key: string, path: string): string {
  if (!key.startsWith("#"))
    throw new MalformedEventError(`expected a subject key #<subject>, got ${key}`, path);
  return key.slice(1);
}

/** The sort key of an entry: its order, then its message id (unique within the subject, commit order kept). */
export function outboxSortKey(entry: Pick<OutboxEntry, "order" | "messageId">): string {
  return `${entry.order}#${entry.messageId}`;
}

/** The item of a new (unsent) entry. */
export function outboxItem(entry: OutboxEntry, pendingBucket: string): Item {
  const a = OUTBOX_ATTRIBUTES;
  const sortKey = outboxSortKey(entry);
  return {
    [a.subject]: S(outboxPartitionKey(entry.subject)),
    [a.order]: S(sortKey),
    [a.messageId]: S(entry.messageId),
    [a.destination]: S(JSON.stringify(entry.destination)),
    [a.body]: S(entry.body),
    [a.groupId]: S(entry.groupId),
    ...(entry.attributes !== undefined
      ? {
          [a.attributes]: {
            M: Object.fromEntries(Object.entries(entry.attributes).map(([k, v]) => [k, S(v)])),
          },
        }
      : {}),
    [a.createdAtMs]: N(entry.createdAtMs),
    [a.unsent]: S(sortKey),
    [a.pendingBucket]: S(pendingBucket),
  };
}

/**
 * The entry of an item, unmarshalled (util-dynamodb's `unmarshall` of a read, or the stream record's image through
 * src/sources/dynamodb-attributes.ts); `MalformedEventError` when it is not an outbox entry.
 */
export function entryOfItem(item: Record<string, unknown>, path = "item"): OutboxEntry {
  const a = OUTBOX_ATTRIBUTES;
  const text = (name: string): string => {
    const v = item[name];
    if (typeof v !== "string") throw new MalformedEventError(`expected a string ${name}`, path);
    return v;
  };
  const sortKey = text(a.order);
  const hashAt = sortKey.indexOf("#");
  if (hashAt <= 0)
    throw new MalformedEventError(`expected an order <order>#<messageId>, got ${sortKey}`, path);
  let destination: Destination;
  try {
    destination = JSON.parse(text(a.destination)) as Destination;
  } catch (cause) {
    throw new MalformedEventError("the destination is not JSON", path, { cause });
  }
  if (typeof destination !== "object" || destination === null || typeof destination.kind !== "string")
    throw new MalformedEventError("the destination is not a destination", path);
  const createdAtMs = Number(item[a.createdAtMs]);
  if (!Number.isSafeInteger(createdAtMs)) throw new MalformedEventError("expected a createdAtMs", path);
  const attributes = item[a.attributes];
  if (attributes !== undefined) {
    const ok =
      typeof attributes === "object" &&
      attributes !== null &&
      Object.values(attributes).every((v) => typeof v === "string");
    if (!ok) throw new MalformedEventError("expected string attributes", path);
  }
  return {
    messageId: text(a.messageId),
    subject: subjectOfPartitionKey(text(a.subject), path),
    order: sortKey.slice(0, hashAt),
    destination,
    body: text(a.body),
    groupId: text(a.groupId),
    ...(attributes !== undefined ? { attributes: { ...(attributes as Record<string, string>) } } : {}),
    createdAtMs,
  };
}
