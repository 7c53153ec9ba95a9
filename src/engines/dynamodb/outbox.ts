import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandOutput,
  type TransactWriteItem,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import type { StoreError } from "../../core/errors.js";
import { integer, oneOf, type Resolved, resolveOptions, schemaFor } from "../../core/options.js";
import type { AtomicWrite } from "../../core/store.js";
import { byCommitTime } from "../../outbox/entry-order.js";
import { outboxWriteDescription } from "../../outbox/message-id.js";
import type * as Outbox from "../../outbox/types.js";
import { type Item, N, S, storeError } from "./expressions.js";
import { DYNAMODB_TABLE_FIELDS } from "./options.js";
import {
  OUTBOX_ATTRIBUTES as A,
  entryOfItem,
  OUTBOX_PENDING_INDEX,
  OUTBOX_UNSENT_INDEX,
  outboxItem,
  outboxPartitionKey,
  outboxSortKey,
} from "./outbox-schema.js";
import { scanAll } from "./scan-all.js";

/** The options of `DynamoDBOutbox`. */
export interface DynamoDBOutboxOptions {
  client: DynamoDBClient;
  /** The outbox table (`createOutboxTable`; its shape: src/engines/dynamodb/outbox-schema.ts). */
  tableName: string;
  /**
   * The engine of the store whose commits fold the entries: `dynamodb` (`DynamoDBStore`, default) or
   * `dynamodb-inline` (`InlineDynamoDBStore`: a commit that publishes becomes a transaction).
   */
  engine?: "dynamodb" | "dynamodb-inline";
  /** How long a sent entry is kept before TTL deletes it (seconds). Default 86 400 (one day). */
  sentRetentionSeconds?: number;
  /**
   * Partitions of the `pending` GSI, by subject: its writes spread over them (a GSI partition takes about 1 000
   * writes a second, and a GSI that falls behind throttles the commits). A polling claim reads each. Default 8.
   * Fixed for a table's life (a bucket no relay reads is never sent by polling).
   */
  pendingBuckets?: number;
}

const DYNAMODB_OUTBOX_OPTIONS = schemaFor<DynamoDBOutboxOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  engine: oneOf(["dynamodb", "dynamodb-inline"] as const, { default: "dynamodb" }),
  sentRetentionSeconds: integer({ min: 1, default: 86_400 }),
  pendingBuckets: integer({ min: 1, max: 100, default: 8 }),
});

/** An outbox entry's Put, as `DynamoDBOutbox.entryWrite` makes it: the DynamoDB stores recognise it by its brand. */
export interface DynamoDBOutboxWrite extends AtomicWrite {
  readonly engine: "dynamodb" | "dynamodb-inline";
  readonly item: TransactWriteItem;
  /**
   * Its condition (no such entry yet) fails only when the same message (same id, same commit order) is in the
   * outbox already: a re-run after the state was forgotten. The commit lands without it: the message is there.
   */
  readonly refused: "stale";
}

const OUTBOX_WRITES = new WeakSet<object>();

/** Whether `write` is an outbox entry's Put made by a `DynamoDBOutbox` (not any other write to another row). */
export function isDynamoDBOutboxWrite(write: AtomicWrite): write is DynamoDBOutboxWrite {
  return OUTBOX_WRITES.has(write);
}

/** Names used in expressions: `order` is a reserved word, the rest named for uniformity. */
const OUTBOX_ATTRIBUTE_NAMES = {
  "#subject": A.subject,
  "#order": A.order,
  "#unsent": A.unsent,
  "#bucket": A.pendingBucket,
  "#owner": A.leaseOwner,
  "#until": A.leaseUntilMs,
  "#sent": A.sentAtMs,
  "#exp": A.expiresAt,
};

/** GSI pages read per bucket in one claim: enough to find `limit` free subjects behind busy ones, bounded. */
const MAX_PENDING_PAGES = 4;

/**
 * The transactional outbox on DynamoDB: each entry an item of its own table (outbox-schema.ts), put by the commit
 * of the event that published it (folded into `DynamoDBStore`'s TransactWriteItems, or turning
 * `InlineDynamoDBStore`'s single UpdateItem into a transaction for that commit only).
 *
 * Two ways to relay: the table's stream (`outboxStreamHandler`, the usual one: no polling, a subject's entries in
 * order in one shard), or this class as an `OutboxReader` for the polling relay (src/outbox/relay.ts). The reader
 * finds subjects with unsent entries through the sparse GSI `pending` (eventually consistent, so only a hint),
 * takes each subject's head with a consistent Query of the sparse LSI `unsentBySubject`, and leases it with a
 * conditional UpdateItem: a relay whose condition fails lost the race and skips the entry.
 */
export class DynamoDBOutbox implements Outbox.Outbox, Outbox.OutboxReader {
  readonly engine: "dynamodb" | "dynamodb-inline";
  readonly #o: Resolved<typeof DYNAMODB_OUTBOX_OPTIONS>;

  constructor(options: DynamoDBOutboxOptions) {
    this.#o = resolveOptions("DynamoDBOutbox", DYNAMODB_OUTBOX_OPTIONS, options);
    this.engine = this.#o.engine;
  }

  get tableName(): string {
    return this.#o.tableName;
  }

  entryWrite(entry: Outbox.OutboxEntry): DynamoDBOutboxWrite {
    const write: DynamoDBOutboxWrite = {
      engine: this.engine,
      description: outboxWriteDescription(entry.messageId),
      refused: "stale",
      item: {
        Put: {
          TableName: this.#o.tableName,
          Item: outboxItem(entry, this.#bucketOf(entry.subject)),
          // An entry is written by one commit only: never over another.
          ConditionExpression: "attribute_not_exists(#order)",
          ExpressionAttributeNames: { "#order": A.order },
        },
      },
    };
    OUTBOX_WRITES.add(write);
    return write;
  }

  async claim(req: Outbox.ClaimEntriesRequest): Promise<Outbox.ClaimedEntry[]> {
    const subjects = await this.#candidates(req);
    const claimed: Outbox.ClaimedEntry[] = [];
    // Subjects in the order their oldest unsent entry was made, a batch at a time: the heads' reads and leases of a
    // batch go out at once.
    for (let i = 0; i < subjects.length && claimed.length < req.limit; ) {
      const batch = subjects.slice(i, i + req.limit - claimed.length);
      i += batch.length;
      const got = await Promise.all(batch.map((subject) => this.#claimHead(subject, req)));
      for (const c of got) if (c) claimed.push(c);
    }
    return claimed.sort(byCommitTime);
  }

  async markSent(entry: Outbox.ClaimedEntry, sentAtMs: number): Promise<boolean> {
    try {
      await this.#o.client.send(
        this.#mark(entry, sentAtMs, {
          ConditionExpression: "attribute_exists(#unsent) AND #owner = :owner AND #until = :until",
          names: ["#owner", "#until"],
          values: { ":owner": S(entry.owner), ":until": N(entry.leaseUntilMs) },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw wrap("markSent", entry.messageId, error);
      // Sent already (by this relay's earlier try, another relay or the stream handler): answered alike.
      return error.Item?.[A.sentAtMs] !== undefined;
    }
  }

  /**
   * Marks an entry sent whoever holds it (the stream handler, which holds no lease): false when it was marked
   * already, or is gone.
   */
  async markSentUnleased(
    entry: Pick<Outbox.OutboxEntry, "subject" | "order" | "messageId">,
    sentAtMs: number,
  ): Promise<boolean> {
    try {
      await this.#o.client.send(
        this.#mark(entry, sentAtMs, {
          ConditionExpression: "attribute_exists(#order) AND attribute_not_exists(#sent)",
          names: ["#order"],
          values: {},
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw wrap("markSent", entry.messageId, error);
    }
  }

  /**
   * The one update that marks an entry sent (its time, its TTL, out of both indexes), under `condition`: the leased
   * relay's (`markSent`) or anybody's (`markSentUnleased`).
   */
  #mark(
    entry: Pick<Outbox.OutboxEntry, "subject" | "order" | "messageId">,
    sentAtMs: number,
    condition: {
      ConditionExpression: string;
      names: Parameters<typeof pick>;
      values: Item;
      ReturnValuesOnConditionCheckFailure?: "ALL_OLD";
    },
  ): UpdateItemCommand {
    const { names, values, ...rest } = condition;
    return new UpdateItemCommand({
      TableName: this.#o.tableName,
      Key: this.#key(entry),
      UpdateExpression: "SET #sent = :sent, #exp = :exp REMOVE #unsent, #bucket",
      ExpressionAttributeNames: pick("#sent", "#exp", "#unsent", "#bucket", ...names),
      ExpressionAttributeValues: { ":sent": N(sentAtMs), ":exp": N(this.#expiresAt(sentAtMs)), ...values },
      ...rest,
    });
  }

  /** Unsent entries: a consistent Scan of the table (operators and tests; not for a hot path). */
  async pending(): Promise<Outbox.OutboxEntry[]> {
    try {
      const items = await scanAll(this.#o.client, {
        TableName: this.#o.tableName,
        ConsistentRead: true,
        FilterExpression: "attribute_exists(#unsent)",
        ExpressionAttributeNames: pick("#unsent"),
      });
      return items.map((item) => entryOfItem(unmarshall(item)));
    } catch (error) {
      throw wrap("pending", this.#o.tableName, error);
    }
  }

  /**
   * Subjects with unsent entries whose head no live lease holds, as the GSI shows them (eventually consistent: a
   * hint, checked by #claimHead), oldest first.
   */
  async #candidates(req: Outbox.ClaimEntriesRequest): Promise<string[]> {
    const oldest = new Map<string, number>();
    const leased = new Set<string>();
    const enough = req.limit * 4;
    await Promise.all(
      Array.from({ length: this.#o.pendingBuckets }, async (_, bucket) => {
        let start: Item | undefined;
        for (let page = 0; page < MAX_PENDING_PAGES; page++) {
          let out: QueryCommandOutput;
          try {
            out = await this.#o.client.send(
              new QueryCommand({
                TableName: this.#o.tableName,
                IndexName: OUTBOX_PENDING_INDEX,
                KeyConditionExpression: "#bucket = :bucket",
                ExpressionAttributeNames: pick("#bucket"),
                ExpressionAttributeValues: { ":bucket": S(String(bucket)) },
                ExclusiveStartKey: start,
              }),
            );
          } catch (error) {
            throw wrap("claim", this.#o.tableName, error);
          }
          for (const item of out.Items ?? []) {
            const subject = item[A.subject]?.S;
            if (subject === undefined) continue;
            // Only a head is ever leased: a live lease on any entry of the subject holds the subject.
            if (Number(item[A.leaseUntilMs]?.N ?? 0) > req.nowMs) leased.add(subject);
            const at = Number(item[A.createdAtMs]?.N);
            if (!(oldest.get(subject)! <= at)) oldest.set(subject, at);
          }
          start = out.LastEvaluatedKey;
          if (!start || oldest.size >= enough) break;
        }
      }),
    );
    return [...oldest]
      .filter(([subject]) => !leased.has(subject))
      .sort((a, b) => a[1] - b[1])
      .map(([subject]) => subject);
  }

  /** The subject's oldest unsent entry (a consistent read of the LSI), leased to the relay unless a live lease holds it. */
  async #claimHead(
    subject: string,
    req: Outbox.ClaimEntriesRequest,
  ): Promise<Outbox.ClaimedEntry | undefined> {
    try {
      const out = await this.#o.client.send(
        new QueryCommand({
          TableName: this.#o.tableName,
          IndexName: OUTBOX_UNSENT_INDEX,
          KeyConditionExpression: "#subject = :subject",
          ExpressionAttributeNames: pick("#subject"),
          ExpressionAttributeValues: { ":subject": S(subject) },
          ConsistentRead: true,
          Limit: 1,
        }),
      );
      const head = out.Items?.[0];
      if (!head || Number(head[A.leaseUntilMs]?.N ?? 0) > req.nowMs) return undefined;
      await this.#o.client.send(
        new UpdateItemCommand({
          TableName: this.#o.tableName,
          Key: { [A.subject]: S(subject), [A.order]: head[A.order] ?? S("") },
          UpdateExpression: "SET #owner = :owner, #until = :until",
          // Still unsent and not leased since the read: else another relay won it.
          ConditionExpression:
            "attribute_exists(#unsent) AND (attribute_not_exists(#until) OR #until <= :now)",
          ExpressionAttributeNames: pick("#owner", "#until", "#unsent"),
          ExpressionAttributeValues: {
            ":owner": S(req.owner),
            ":until": N(req.leaseUntilMs),
            ":now": N(req.nowMs),
          },
        }),
      );
      return { ...entryOfItem(unmarshall(head)), owner: req.owner, leaseUntilMs: req.leaseUntilMs };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw wrap("claim", subject, error);
    }
  }

  #key(entry: Pick<Outbox.OutboxEntry, "subject" | "order" | "messageId">): Item {
    return { [A.subject]: S(outboxPartitionKey(entry.subject)), [A.order]: S(outboxSortKey(entry)) };
  }

  #expiresAt(sentAtMs: number): number {
    return Math.floor(sentAtMs / 1000) + this.#o.sentRetentionSeconds;
  }

  /** A subject's GSI bucket: FNV-1a of the subject, so a subject's entries share one (any spread would do). */
  #bucketOf(subject: string): string {
    let h = 0x811c9dc5;
    for (let i = 0; i < subject.length; i++) h = Math.imul(h ^ subject.charCodeAt(i), 0x01000193);
    return String((h >>> 0) % this.#o.pendingBuckets);
  }
}

function pick(...placeholders: (keyof typeof OUTBOX_ATTRIBUTE_NAMES)[]): Record<string, string> {
  return Object.fromEntries(placeholders.map((p) => [p, OUTBOX_ATTRIBUTE_NAMES[p]]));
}

function wrap(op: string, what: string, error: unknown): StoreError {
  return storeError("DynamoDB outbox", op, what, error);
}
