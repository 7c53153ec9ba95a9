import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { numberEnv, requireEnv } from "../shared/env.js";
import { guardedRecordsHandler } from "./handler.js";

/**
 * The records pipeline's Lambda function (S3 → Lambda → DynamoDB), guard on.
 * Environment: RECORDS_TABLE (hash key `id`), STATE_TABLE (see createStateTable), LEASE_MS (default 30 000).
 * Clients use the SDK's default endpoints (AWS_ENDPOINT_URL_* locally).
 */
const dynamodb = new DynamoDBClient({});

export const handler = guardedRecordsHandler({
  dynamodb,
  recordsTable: requireEnv("RECORDS_TABLE"),
  store: new DynamoDBStore({ client: dynamodb, tableName: requireEnv("STATE_TABLE") }),
  options: { leaseMs: numberEnv("LEASE_MS", 30_000) },
});
