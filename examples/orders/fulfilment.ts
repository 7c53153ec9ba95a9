import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { SQSEvent } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";

/**
 * Fulfilment: the second pipeline of the orders demo. The orders pipeline publishes "order charged" (`Charged`) to a
 * queue; this one ships each charged order once, a row per shipment in DynamoDB.
 *
 * Shipments table: `shipmentId` (hash key, new per shipment), `orderId`, `chargeId`, `shippedAt`.
 */
export interface Charged {
  orderId: string;
  chargeId: string;
}

export function parseCharged(body: string): Charged {
  const value = JSON.parse(body) as Partial<Charged>;
  if (typeof value?.orderId !== "string" || typeof value.chargeId !== "string")
    throw new Error("an order-charged message without orderId or chargeId");
  return value as Charged;
}

export interface FulfilmentConfig {
  dynamodb: DynamoDBClient;
  shipmentsTable: string;
}

/** The naive consumer: a shipment for every message it is handed. */
export function naiveFulfilmentHandler(config: FulfilmentConfig) {
  return async (event: SQSEvent): Promise<void> => {
    for (const record of event.Records) {
      const charged = parseCharged(record.body);
      await faultPoint(); // the warehouse call, sometimes slow
      await config.dynamodb.send(
        new PutItemCommand({
          TableName: config.shipmentsTable,
          Item: marshall({ shipmentId: randomUUID(), ...charged, shippedAt: new Date().toISOString() }),
        }),
      );
    }
  };
}

/**
 * Guard on: the shipment row in the guard's commit. No subject or identity option: a message the orders pipeline
 * published through its outbox carries the relay's `eonceMessageId`, which the wrapper takes as the message's id,
 * so every resend of one message (a relay that died after sending, two relays racing, a batch retried) is a
 * duplicate here.
 */
export function guardedFulfilmentHandler(
  config: FulfilmentConfig & { store: StateStore; options?: Omit<EffectivelyOnceOptions, "store"> },
) {
  const shipments = new DynamoDBFencedSink({
    client: config.dynamodb,
    tableName: config.shipmentsTable,
    keyAttribute: "shipmentId",
  });
  return sqsHandler(
    async (event, ctx) => {
      if (event.kind !== "message") return undefined;
      const charged = parseCharged(event.body);
      await faultPoint();
      shipments.putAtCommit(ctx, {
        shipmentId: randomUUID(),
        ...charged,
        shippedAt: new Date().toISOString(),
      });
      return undefined;
    },
    { ...config.options, store: config.store, messages: "accept" },
  );
}
