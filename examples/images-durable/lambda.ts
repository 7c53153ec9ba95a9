import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { StableEvent } from "../../src/durable/index.js";
import { DynamoDBStepEffects } from "../../src/engines/dynamodb/index.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { requireEnv } from "../shared/env.js";
import { imagesDispatcher, imagesWorkflow } from "./workflow.js";

/**
 * The images durable workflow's two Lambda functions, from the environment:
 *
 * - `handler`, the dispatcher (S3 → EventBridge → this function): STATE_TABLE (see createStateTable), EFFECTS_TABLE
 *   (hash key `pk`: the step markers and execution fences), WORKFLOW_FUNCTION (the durable function, qualified;
 *   default `images-workflow:live`);
 * - `workflow`, the durable function: EFFECTS_TABLE, INDEX_TABLE and OUTBOX_TABLE (hash key `pk`; both default to
 *   EFFECTS_TABLE, one table is enough to try it), OUTPUT_BUCKET (the thumbnails).
 *
 * Clients use the SDK's default endpoints (AWS_ENDPOINT_URL_* locally: `eonce run` points the LambdaClient at its
 * local Invoke endpoint). Under `eonce run`: docs/durable.md, "Under eonce run".
 */
const dynamodb = new DynamoDBClient({});
const s3 = new S3Client({});
const effectsTable = requireEnv("EFFECTS_TABLE");
const effects = new DynamoDBStepEffects({ client: dynamodb, tableName: effectsTable });

export const handler = imagesDispatcher({
  store: new DynamoDBStore({ client: dynamodb, tableName: requireEnv("STATE_TABLE") }),
  lambda: new LambdaClient({}),
  functionName: process.env.WORKFLOW_FUNCTION || "images-workflow:live",
  stepEffects: effects,
});

export const workflow = imagesWorkflow({
  effects,
  index: new DynamoDBFencedSink({ client: dynamodb, tableName: process.env.INDEX_TABLE || effectsTable }),
  outboxTable: process.env.OUTBOX_TABLE || effectsTable,
  render,
});

/**
 * A stand-in for the thumbnail renderer (swap in sharp for real thumbnails): copies the upload to
 * `thumbs/<key>` in OUTPUT_BUCKET. Running it again rewrites the same object.
 */
async function render(event: StableEvent): Promise<{ thumbnailKey: string; bytes: number }> {
  if (event.kind !== "s3") throw new Error("the images workflow takes S3 events");
  const thumbnailKey = `thumbs/${event.key}`;
  if (event.operation !== "created") return { thumbnailKey, bytes: 0 };
  const object = await s3.send(new GetObjectCommand({ Bucket: event.bucket, Key: event.key }));
  const body = await object.Body?.transformToByteArray();
  await s3.send(
    new PutObjectCommand({
      Bucket: requireEnv("OUTPUT_BUCKET"),
      Key: thumbnailKey,
      Body: body ?? new Uint8Array(),
    }),
  );
  return { thumbnailKey, bytes: body?.length ?? 0 };
}
