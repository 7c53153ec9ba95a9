import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { type Clock, systemClock } from "../../core/clock.js";
import { custom, func, required, resolveOptions, schemaFor } from "../../core/options.js";
import { OutboxEntryInvalidError } from "../../outbox/errors.js";
import type { OutboxEntry, OutboxSender } from "../../outbox/types.js";
import { unmarshallImage } from "../../sources/dynamodb-attributes.js";
import { DynamoDBOutbox } from "./outbox.js";
import { entryOfItem } from "./outbox-schema.js";

/** The options of `outboxStreamHandler`. */
export interface OutboxStreamHandlerOptions {
  /** The outbox whose table's stream the handler reads (it marks the entries sent there). */
  outbox: DynamoDBOutbox;
  sender: OutboxSender;
  /** Called with each INSERT record whose image is not an outbox entry (it is acknowledged, never retried). */
  onMalformed?: (record: DynamoDBRecord, error: unknown) => void;
  /** Called with the entry a send of which failed (the batch is retried from its record). */
  onSendError?: (entry: OutboxEntry, error: unknown) => void;
  /** Clock of `sentAtMs`. Default the system clock. */
  clock?: Clock;
}

const OUTBOX_STREAM_HANDLER_OPTIONS = schemaFor<OutboxStreamHandlerOptions>()({
  outbox: required(custom<DynamoDBOutbox>("a DynamoDBOutbox", (v) => v instanceof DynamoDBOutbox)),
  sender: required(
    custom<OutboxSender>("an OutboxSender", (v) => typeof (v as OutboxSender)?.send === "function"),
  ),
  onMalformed: func<(record: DynamoDBRecord, error: unknown) => void>(),
  onSendError: func<(entry: OutboxEntry, error: unknown) => void>(),
  clock: custom<Clock>("a Clock (see src/core/clock.ts)", (v) => typeof v === "object" && v !== null),
});

/** The handler, and what it has done since it was made (one Lambda container's share). */
export interface OutboxStreamHandler {
  /** Sends each INSERT record's entry and marks it sent; the answer names the first record whose send failed. */
  (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse>;
  readonly counts: { sent: number; failed: number; malformed: number; ignored: number; rejected: number };
}

/** Per subject, its INSERT records' entries in stream order (with their index in the batch); the rest counted. */
function entriesBySubject(
  event: DynamoDBStreamEvent,
  counts: { ignored: number; malformed: number },
  onMalformed: (record: DynamoDBRecord, error: unknown) => void,
): Map<string, { index: number; entry: OutboxEntry }[]> {
  const bySubject = new Map<string, { index: number; entry: OutboxEntry }[]>();
  (event.Records ?? []).forEach((record, index) => {
    if (record.eventName !== "INSERT") {
      counts.ignored++;
      return;
    }
    let entry: OutboxEntry;
    try {
      entry = entryOfItem(unmarshallImage(record.dynamodb?.NewImage, "NewImage"), "NewImage");
    } catch (error) {
      counts.malformed++;
      onMalformed(record, error);
      return;
    }
    const list = bySubject.get(entry.subject) ?? [];
    list.push({ index, entry });
    bySubject.set(entry.subject, list);
  });
  return bySubject;
}

/**
 * The relay of a DynamoDB outbox as a Lambda function on its table's stream (NEW_IMAGE; the event source mapping
 * with `ReportBatchItemFailures`). Each INSERT is a committed entry: sent with its message id, then marked sent
 * (so polling relays and `pending()` pass over it). A subject's entries are in one shard, in commit order; the
 * handler sends each subject's in order and the subjects of a batch side by side.
 *
 * A failed send (or mark) stops its subject and answers the first such record as the batch item failure: Lambda
 * retries the batch from it, so a record after it may be sent twice, always under its one message id (the
 * destination's or the consumer's deduplication makes that once). An entry a polling relay sent first is sent again
 * too (no read before each send). MODIFY and REMOVE records (marks, leases, TTL) are ignored; an INSERT whose image
 * is not an entry is counted, reported to `onMalformed` and acknowledged: it never blocks the shard.
 */
export function outboxStreamHandler(options: OutboxStreamHandlerOptions): OutboxStreamHandler {
  const o = resolveOptions("outboxStreamHandler", OUTBOX_STREAM_HANDLER_OPTIONS, options);
  const clock = o.clock ?? systemClock;
  const counts = { sent: 0, failed: 0, malformed: 0, ignored: 0, rejected: 0 };
  const onMalformed =
    o.onMalformed ??
    ((record: DynamoDBRecord, error: unknown) =>
      console.error(
        `outboxStreamHandler: record ${record.dynamodb?.SequenceNumber} is not an outbox entry; skipped:`,
        error instanceof Error ? error.message : error,
      ));

  const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    const bySubject = entriesBySubject(event, counts, onMalformed);
    let firstFailed: number | undefined;
    await Promise.all(
      [...bySubject.values()].map(async (entries) => {
        for (const { index, entry } of entries) {
          // A subject after an earlier failure waits for the retry, which starts at that failure anyway.
          if (firstFailed !== undefined && firstFailed < index) return;
          try {
            await o.sender.send(entry);
            counts.sent++;
            // False: sent and marked already (a polling relay, an earlier try): nothing to do.
            await o.outbox.markSentUnleased(entry, clock.now());
          } catch (error) {
            o.onSendError?.(entry, error);
            if (error instanceof OutboxEntryInvalidError) {
              // No send of it can succeed: acknowledged and counted, or it would hold the shard forever.
              counts.rejected++;
              await o.outbox.markSentUnleased(entry, clock.now()).catch(() => false);
              continue;
            }
            counts.failed++;
            if (firstFailed === undefined || index < firstFailed) firstFailed = index;
            return;
          }
        }
      }),
    );
    if (firstFailed === undefined) return { batchItemFailures: [] };
    const failed = event.Records[firstFailed]?.dynamodb?.SequenceNumber ?? "";
    return { batchItemFailures: [{ itemIdentifier: failed }] };
  };
  return Object.assign(handler, { counts });
}
