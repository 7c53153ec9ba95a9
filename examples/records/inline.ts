import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { InlineDynamoDBStore } from "../../src/engines/dynamodb/inline-store.js";
import {
  type ApplyEventHandler,
  type EffectivelyOnceApplyOptions,
  eventBridgeHandler,
  s3Handler,
  sqsHandler,
} from "../../src/lambda/index.js";

/**
 * Records with inline state: the guard's state lives in each upload's own record row, so there is no state table and
 * no transaction. Each upload is deduplicated by its identity (unordered events), so its row is keyed by its state
 * key (`u#<len>#<bucket/key><identity>`, deterministic per upload) in the records table's hash key `id`.
 *
 * The row is the handler's only effect, so the wrappers run in mode `apply`: the handler computes the row, then one
 * conditional UpdateItem claims, writes the row and commits. A new upload costs 1 request and 1 WCU, a duplicate
 * notification 1 refused write (test/examples/records-inline.test.ts counts both, for every trigger below).
 * (`guardedRecordsHandler` with `DynamoDBStore`: 2 requests, 1 + 2 × 2 WCU.)
 */
export interface InlineRecordsConfig {
  dynamodb: DynamoDBClient;
  /** Hash key `id` (string). */
  recordsTable: string;
  options?: Omit<EffectivelyOnceApplyOptions, "store" | "orderS3Events" | "mode">;
}

/** S3 → Lambda (direct). */
export function inlineRecordsHandler(config: InlineRecordsConfig) {
  const { store, handler } = records(config);
  return s3Handler(handler, { ...config.options, store, orderS3Events: false, mode: "apply" });
}

/** S3 → SQS → Lambda. Enable ReportBatchItemFailures on the event source mapping; give the queue a DLQ. */
export function inlineRecordsQueueHandler(config: InlineRecordsConfig) {
  const { store, handler } = records(config);
  return sqsHandler(handler, { ...config.options, store, orderS3Events: false, mode: "apply" });
}

/** S3 → EventBridge → Lambda. */
export function inlineRecordsEventBridgeHandler(config: InlineRecordsConfig) {
  const { store, handler } = records(config);
  return eventBridgeHandler(handler, { ...config.options, store, orderS3Events: false, mode: "apply" });
}

/**
 * The store, and the handler every trigger shares: it only computes the upload's row (no other side effect: in mode
 * `apply` it also runs for a duplicate, whose row is then never written).
 */
function records(config: InlineRecordsConfig): {
  store: InlineDynamoDBStore;
  handler: ApplyEventHandler<void>;
} {
  const store = new InlineDynamoDBStore({
    client: config.dynamodb,
    tableName: config.recordsTable,
    keyAttribute: "id",
  });
  const handler: ApplyEventHandler<void> = (e, ctx) => {
    if (e.kind !== "s3" || e.operation !== "created") return;
    ctx.atCommit(
      store.row(ctx, {
        bucket: e.bucket,
        filename: e.key,
        sequencer: e.sequencer,
        etag: e.etag,
        size: e.size,
        processedAt: new Date().toISOString(),
      }),
    );
  };
  return { store, handler };
}
