import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { numberEnv, requireEnv } from "../shared/env.js";
import { guardedOrdersHandler } from "./handler.js";

/**
 * The orders pipeline's Lambda function (SQS → Lambda → DynamoDB), guard and visibility heartbeat on.
 * Environment: CHARGES_TABLE (hash key `chargeId`), STATE_TABLE, LEASE_MS (default 30 000),
 * HEARTBEAT_VISIBILITY_S (default 60), HEARTBEAT_INTERVAL_S (default 20), PAYMENTS_API_URL (optional: the payments
 * API to charge, with the order's effect key; the local runtime's when started with `services.payments`).
 * With AWS_ENDPOINT_URL_SQS set (local runs: `eonce run` sets it) the heartbeat addresses queues there.
 */
const dynamodb = new DynamoDBClient({});

export const handler = guardedOrdersHandler({
  dynamodb,
  chargesTable: requireEnv("CHARGES_TABLE"),
  ...(process.env.PAYMENTS_API_URL ? { paymentsUrl: process.env.PAYMENTS_API_URL } : {}),
  store: new DynamoDBStore({ client: dynamodb, tableName: requireEnv("STATE_TABLE") }),
  visibilityTimeoutSeconds: numberEnv("HEARTBEAT_VISIBILITY_S", 60),
  intervalSeconds: numberEnv("HEARTBEAT_INTERVAL_S", 20),
  options: { leaseMs: numberEnv("LEASE_MS", 30_000) },
});
