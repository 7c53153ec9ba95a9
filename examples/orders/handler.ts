import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { SQSEvent } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";
import { parseOrder } from "./order.js";

/**
 * Orders: SQS → Lambda → a charge per order in DynamoDB (the "duplicate delivery dilemma" article).
 * When charging takes longer than the queue's visibility timeout, the message reappears and a second
 * consumer charges the order again.
 *
 * Charges table: `chargeId` (hash key), `orderId`, `customerId`, `amountCents`, `chargedAt`.
 */
export interface OrdersConfig {
  dynamodb: DynamoDBClient;
  chargesTable: string;
}

/** The naive consumer: charge every message it is handed. Any error fails (and redelivers) the batch. */
export function naiveOrdersHandler(config: OrdersConfig) {
  return async (event: SQSEvent): Promise<void> => {
    for (const record of event.Records) {
      const order = parseOrder(record.body);
      await faultPoint(); // the payment provider call, sometimes slow
      await config.dynamodb.send(
        new PutItemCommand({
          TableName: config.chargesTable,
          Item: marshall({ chargeId: randomUUID(), ...order, chargedAt: new Date().toISOString() }),
        }),
      );
    }
  };
}

export interface GuardedOrdersConfig extends OrdersConfig {
  store: StateStore;
  sqsClient?: SQSClient;
  /** Each heartbeat hides the message this long (default 60), every `intervalSeconds` (default 20). */
  visibilityTimeoutSeconds?: number;
  intervalSeconds?: number;
  options?: Omit<EffectivelyOnceOptions, "store" | "visibilityHeartbeat" | "sqsClient">;
}

/**
 * Guard on: one charge per order id, written in the same DynamoDB transaction as the guard's commit
 * (exactly once, not just deduplicated), plus a visibility heartbeat so a slow charge is not handed to
 * a second consumer in the first place. Failures are reported per message (ReportBatchItemFailures).
 */
export function guardedOrdersHandler(config: GuardedOrdersConfig) {
  const charges = new DynamoDBFencedSink({
    client: config.dynamodb,
    tableName: config.chargesTable,
    keyAttribute: "chargeId",
  });
  return sqsHandler(
    async (event, ctx) => {
      if (event.kind !== "message") return undefined;
      const order = parseOrder(event.body);
      await faultPoint();
      const chargeId = randomUUID();
      charges.putAtCommit(ctx, { chargeId, ...order, chargedAt: new Date().toISOString() });
      return { chargeId };
    },
    {
      ...config.options,
      store: config.store,
      messages: "accept",
      subject: (m) => parseOrder(m.body).orderId,
      identity: (m) => parseOrder(m.body).orderId,
      visibilityHeartbeat: {
        visibilityTimeoutSeconds: config.visibilityTimeoutSeconds ?? 60,
        intervalSeconds: config.intervalSeconds ?? 20,
      },
      ...(config.sqsClient ? { sqsClient: config.sqsClient } : {}),
    },
  );
}
