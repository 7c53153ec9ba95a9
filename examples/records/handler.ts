import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { Context, S3Event, S3EventRecord } from "aws-lambda";
import { createGuard, type GuardOptions } from "../../src/core/guard.js";
import { lambdaDeadline } from "../../src/lambda/deadline.js";
import { faultPoint } from "../../src/local/invocation-scope.js";
import { DynamoDBFencedSink } from "../../src/sinks/dynamodb.js";
import { parseInvocation } from "../../src/sources/parse-invocation.js";
import type { StateStore } from "../../src/stores/contract.js";

/**
 * Records: one DynamoDB row per upload (S3 → Lambda → DynamoDB, the pipeline of the articles).
 * Re-uploading a key is a new upload and gets its own row, so events are deduplicated, never ordered:
 * an older upload arriving late is still a row to write, not a stale event to skip.
 *
 * Rows: `id` (hash key), `bucket`, `filename`, `sequencer` (the upload's), `etag`, `size`, `processedAt`.
 */
export interface RecordsConfig {
  dynamodb: DynamoDBClient;
  recordsTable: string;
}

/**
 * The naive handler: a put per record. A retried or duplicated notification writes a second row.
 * (With the articles' `id = md5(key)` a re-upload would overwrite the first upload's row instead.)
 */
export function naiveRecordsHandler(config: RecordsConfig) {
  return async (event: S3Event): Promise<void> => {
    for (const record of event.Records) {
      await faultPoint();
      await config.dynamodb.send(
        new PutItemCommand({
          TableName: config.recordsTable,
          Item: marshall(rowOf(record, randomUUID()), { removeUndefinedValues: true }),
        }),
      );
    }
  };
}

export interface GuardedRecordsConfig extends RecordsConfig {
  store: StateStore;
  /** Guard settings (lease, waits). */
  guard?: Omit<GuardOptions, "store">;
  /** Waiting stops, and the handler's signal aborts, this long before the Lambda times out. Default 500. */
  deadlineMarginMs?: number;
}

/**
 * The guarded handler: dedupe-only guard per upload (identity = sequencer and operation, no position),
 * and the row is written in the same DynamoDB transaction as the guard's commit, so an upload gets
 * exactly one row whatever fails where. Failed records make the invocation throw, so Lambda retries.
 *
 * It drives the core guard directly: the S3 wrapper of `src/lambda` orders S3 events by sequencer,
 * which is right for images but would skip a re-upload's older event here.
 */
export function guardedRecordsHandler(config: GuardedRecordsConfig) {
  const sink = new DynamoDBFencedSink({
    client: config.dynamodb,
    tableName: config.recordsTable,
    keyAttribute: "id",
  });
  const guard = createGuard({ ...config.guard, store: config.store });
  return async (event: unknown, context: Context) => {
    const outcomes: { subject: string; status: string }[] = [];
    const deadline = lambdaDeadline(context, config.deadlineMarginMs ?? 500);
    try {
      for (const unit of parseInvocation(event)) {
        // Malformed input: retrying the same bytes cannot help; acknowledge and count it.
        if (unit.error) {
          outcomes.push({ subject: unit.delivery.correlationId, status: "malformed" });
          continue;
        }
        for (const e of unit.events) {
          if (e.kind !== "s3" || e.operation !== "created") continue;
          const outcome = await guard.run(
            { subject: e.subject, identity: e.identity },
            async (ctx) => {
              await faultPoint();
              sink.putAtCommit(ctx, {
                id: randomUUID(),
                bucket: e.bucket,
                filename: e.key,
                sequencer: e.sequencer,
                etag: e.etag,
                size: e.size,
                processedAt: new Date().toISOString(),
              });
            },
            { deadlineMs: deadline.deadlineMs, signal: deadline.signal },
          );
          outcomes.push({ subject: e.subject, status: outcome.status });
        }
      }
    } finally {
      deadline.dispose();
    }
    const failed = outcomes.filter((o) => !ACKNOWLEDGED.has(o.status));
    if (failed.length > 0) {
      throw new Error(
        `${failed.length} record(s) not processed, retry: ${failed.map((f) => `${f.subject} (${f.status})`).join(", ")}`,
      );
    }
    return { outcomes };
  };
}

/** Outcomes after which the record is done: a retry could only repeat them. */
const ACKNOWLEDGED = new Set(["processed", "duplicate", "stale", "lease-lost", "malformed"]);

function rowOf(record: S3EventRecord, id: string): Record<string, unknown> {
  return {
    id,
    bucket: record.s3.bucket.name,
    filename: decodeURIComponent(record.s3.object.key.replace(/\+/g, " ")),
    sequencer: record.s3.object.sequencer,
    etag: record.s3.object.eTag,
    size: record.s3.object.size,
    processedAt: new Date().toISOString(),
  };
}
