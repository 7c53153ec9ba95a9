import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type EffectivelyOnceOptions, s3Handler } from "../../src/lambda/index.js";
import { InlineDynamoDBStore } from "../../src/stores/dynamodb/inline.js";

/**
 * Records with inline state: the guard's state lives in each upload's own record row, so there is no state table and
 * no transaction. Each upload is deduplicated by its identity (unordered events), so its row is keyed by its state
 * key (`u#<len>#<bucket/key><identity>`, deterministic per upload) in the records table's hash key `id`. A new
 * upload costs two plain UpdateItems (the wrapper runs `guard.run`: claim, then commit with the row), 2 WCU; a
 * duplicate notification one refused write, 1 WCU. (`guardedRecordsHandler` with `DynamoDBStore`: 1 + 2 × 2 WCU.)
 */
export interface InlineRecordsConfig {
  dynamodb: DynamoDBClient;
  /** Hash key `id` (string). */
  recordsTable: string;
  options?: Omit<EffectivelyOnceOptions, "store" | "orderS3Events">;
}

export function inlineRecordsHandler(config: InlineRecordsConfig) {
  const store = new InlineDynamoDBStore({
    client: config.dynamodb,
    tableName: config.recordsTable,
    keyAttribute: "id",
  });
  return s3Handler(
    async (e, ctx) => {
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
    },
    { ...config.options, store, orderS3Events: false },
  );
}
