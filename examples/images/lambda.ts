import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { numberEnv, requireEnv } from "../shared/env.js";
import { guardedImagesHandler } from "./handler.js";

/**
 * The images pipeline's Lambda function (S3 → EventBridge → Lambda → S3), guard on.
 * Environment: OUTPUT_BUCKET, STATE_TABLE, LEASE_MS (default 30 000).
 * Clients use the SDK's default endpoints (AWS_ENDPOINT_URL_* locally).
 */
const dynamodb = new DynamoDBClient({});

export const handler = guardedImagesHandler({
  s3: new S3Client({}),
  outputBucket: requireEnv("OUTPUT_BUCKET"),
  store: new DynamoDBStore({ client: dynamodb, tableName: requireEnv("STATE_TABLE") }),
  options: { leaseMs: numberEnv("LEASE_MS", 30_000) },
});
