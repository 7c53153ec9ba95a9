import { randomUUID } from "node:crypto";
import {
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import type { DynamoDBStreamEvent } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { updateEffect } from "../../src/engines/dynamodb/sink-update.js";
import { dynamodbStreamHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";

/**
 * Totals: an orders table's stream (DynamoDB Streams, NEW_AND_OLD_IMAGES) → Lambda → each customer's running total,
 * a view of each order, and a ledger row per applied change. An order is written, corrected (its amount changed) and
 * sometimes cancelled (deleted); each change moves its customer's total by the difference of the images.
 *
 * Tables: totals `customerId` → `totalCents`; orders view `orderId` → `amountCents` (or `deleted`); ledger
 * `applyId` → `change` (the stream record's event id: one row per change applied).
 */
export interface TotalsConfig {
  dynamodb: DynamoDBClient;
  totalsTable: string;
  viewTable: string;
  ledgerTable: string;
}

/** An order item's amount in cents (0 when there is no image: an INSERT's old one, a REMOVE's new one). */
export function amountOf(image: Record<string, unknown> | undefined): number {
  const amount = image?.amountCents;
  return typeof amount === "number" ? amount : 0;
}

/** The customer and order an image belongs to. */
function orderOf(image: Record<string, unknown>): { orderId: string; customerId: string } {
  return { orderId: String(image.orderId), customerId: String(image.customerId) };
}

/**
 * The naive projection: each record of the batch moves the total, writes the view and a ledger row. A batch Lambda
 * retries (a run failed after its writes, or timed out) moves the totals again; a run that timed out and wakes later
 * writes an old amount over a newer one in the view.
 */
export function naiveTotalsHandler(config: TotalsConfig) {
  const { dynamodb } = config;
  return async (event: DynamoDBStreamEvent): Promise<void> => {
    for (const record of event.Records) {
      const images = record.dynamodb ?? {};
      // biome-ignore lint/suspicious/noExplicitAny: Lambda's AttributeValue JSON is what unmarshall takes
      const before = images.OldImage ? unmarshall(images.OldImage as any) : undefined;
      // biome-ignore lint/suspicious/noExplicitAny: as above
      const after = images.NewImage ? unmarshall(images.NewImage as any) : undefined;
      const { orderId, customerId } = orderOf((after ?? before) as Record<string, unknown>);
      await dynamodb.send(
        new UpdateItemCommand({
          TableName: config.totalsTable,
          Key: marshall({ customerId }),
          UpdateExpression: "ADD totalCents :d",
          ExpressionAttributeValues: marshall({ ":d": amountOf(after) - amountOf(before) }),
        }),
      );
      await faultPoint(); // the rest of the work, sometimes slow
      if (after) {
        const Item = marshall({ orderId, amountCents: amountOf(after) });
        await dynamodb.send(new PutItemCommand({ TableName: config.viewTable, Item }));
      } else {
        await dynamodb.send(
          new DeleteItemCommand({ TableName: config.viewTable, Key: marshall({ orderId }) }),
        );
      }
      await dynamodb.send(
        new PutItemCommand({
          TableName: config.ledgerTable,
          Item: marshall({ applyId: randomUUID(), change: record.eventID ?? "" }),
        }),
      );
    }
  };
}

export interface GuardedTotalsConfig extends TotalsConfig {
  store: StateStore;
  /** The guard's tuning (lease, waits) and observability: the keys are the stream's defaults. */
  options?: Pick<
    EffectivelyOnceOptions,
    "leaseMs" | "waitIntervalMs" | "maxWaitIntervalMs" | "logger" | "metrics"
  >;
}

/**
 * Guard on: each change is one event of its order (subject: the table and the item's key; position: the stream
 * sequence number, docs/sources.md), and its three effects are folded into the guard's commit: the total's ADD
 * (exactly once per change), the view written by a fenced put (a removal as a tombstone: an older change arriving late
 * cannot bring a cancelled order back) and the ledger row.
 */
export function guardedTotalsHandler(config: GuardedTotalsConfig) {
  const view = new DynamoDBFencedSink({
    client: config.dynamodb,
    tableName: config.viewTable,
    keyAttribute: "orderId",
  });
  const ledger = new DynamoDBFencedSink({
    client: config.dynamodb,
    tableName: config.ledgerTable,
    keyAttribute: "applyId",
  });
  return dynamodbStreamHandler(
    async (change, ctx) => {
      const { orderId, customerId } = orderOf(change.newImage ?? change.oldImage ?? change.keys);
      const delta = amountOf(change.newImage) - amountOf(change.oldImage);
      await faultPoint();
      ctx.atCommit(
        updateEffect({ tableName: config.totalsTable, key: { customerId }, add: { totalCents: delta } }),
      );
      view.putAtCommit(
        ctx,
        change.removal ? { orderId, deleted: true } : { orderId, amountCents: amountOf(change.newImage) },
      );
      ledger.putAtCommit(ctx, { applyId: randomUUID(), change: change.eventId });
      return { delta };
    },
    { ...config.options, store: config.store },
  );
}
