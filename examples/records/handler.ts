import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { S3Event, S3EventRecord } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { type EffectivelyOnceOptions, s3Handler } from "../../src/lambda/index.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";

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
  /** Wrapper options besides the store (lease, waits, logger, metrics, deadline margin). */
  options?: Omit<EffectivelyOnceOptions, "store" | "orderS3Events">;
}

/**
 * The guarded handler: the S3 wrapper with `orderS3Events: false` — each upload is deduplicated by its own identity
 * (sequencer and operation), never skipped as stale, since a re-upload is a new row, not a newer state — and the row
 * is written in the same DynamoDB transaction as the guard's commit, so an upload gets exactly one row whatever fails
 * where. A failed record makes the invocation throw, so Lambda retries; malformed records are acknowledged and
 * counted.
 */
export function guardedRecordsHandler(config: GuardedRecordsConfig) {
  const sink = new DynamoDBFencedSink({
    client: config.dynamodb,
    tableName: config.recordsTable,
    keyAttribute: "id",
  });
  return s3Handler(
    async (e, ctx) => {
      if (e.kind !== "s3" || e.operation !== "created") return;
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
    { ...config.options, store: config.store, orderS3Events: false },
  );
}

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
