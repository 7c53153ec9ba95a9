import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { SQSEvent } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { faultPoint } from "../../src/local/delivery/invocation-scope.js";
import { chargeWithKey, PaymentsApiError } from "../shared/payments.js";
import { type Order, parseOrder } from "./order.js";

/**
 * Orders: SQS → Lambda → a charge per order at the payments API, recorded in DynamoDB (the "duplicate delivery
 * dilemma" article). When charging takes longer than the queue's visibility timeout, the message reappears and a
 * second consumer charges the order again; when the API's answer is lost, the client's retry charges it again.
 *
 * Charges table: `chargeId` (hash key: the API's charge id), `orderId`, `customerId`, `amountCents`, `chargedAt`.
 */
export interface OrdersConfig {
  dynamodb: DynamoDBClient;
  chargesTable: string;
  /**
   * The payments API (`PAYMENTS_API_URL`, src/local/emulators/payments-server.ts). Absent: no provider is called,
   * the charge is only recorded (under a random id).
   */
  paymentsUrl?: string;
  /**
   * Where "order charged" goes (the fulfilment pipeline's queue, examples/orders/fulfilment.ts), with the SQS client
   * to send it; absent: nothing is published.
   */
  charged?: { queueUrl: string; sqs: SQSClient };
}

/** Sends "order charged" from the handler itself: once per run that gets this far, committed or not. */
async function sendCharged(config: OrdersConfig, orderId: string, chargeId: string): Promise<void> {
  if (!config.charged) return;
  await config.charged.sqs.send(
    new SendMessageCommand({
      QueueUrl: config.charged.queueUrl,
      MessageBody: JSON.stringify({ orderId, chargeId }),
    }),
  );
}

/** Sends a charge this many times at most when the answer is lost, a 5xx or a 409 (the key's request in progress). */
const CHARGE_ATTEMPTS = 3;
const CHARGE_RETRY_DELAY_MS = 50;

/**
 * Charges `order` at the payments API as a client does: it sends the request again when the answer is lost or the
 * API asks for a retry. Without `idempotencyKey`, each resend after a lost answer is a new charge; with it, the
 * API replays the first one. The charge's id (a random one without an API).
 */
async function chargeOrder(
  config: OrdersConfig,
  order: Order,
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<string> {
  if (config.paymentsUrl === undefined) return randomUUID();
  // Only the API's parameters, a function of the order alone (a key reused with another body is refused, 422).
  const input = {
    amountCents: order.amountCents,
    currency: "eur",
    customerId: order.customerId,
    orderId: order.orderId,
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return (await chargeWithKey(config.paymentsUrl, input, options)).charge.id;
    } catch (error) {
      // A lost answer rejects as fetch does (TypeError); anything else the API did not ask to retry is final.
      const retryable = error instanceof TypeError || (error instanceof PaymentsApiError && error.retryable);
      if (!retryable || attempt >= CHARGE_ATTEMPTS || options.signal?.aborted) throw error;
      await new Promise((r) => setTimeout(r, CHARGE_RETRY_DELAY_MS * attempt));
    }
  }
}

/**
 * The naive consumer: charge every message it is handed, without an idempotency key, then record the charge. Any
 * error fails (and redelivers) the batch.
 */
export function naiveOrdersHandler(config: OrdersConfig) {
  return async (event: SQSEvent): Promise<void> => {
    for (const record of event.Records) {
      const order = parseOrder(record.body);
      const chargeId = await chargeOrder(config, order);
      await faultPoint(); // after the charge, before its row: sometimes slow, sometimes the run dies here
      await config.dynamodb.send(
        new PutItemCommand({
          TableName: config.chargesTable,
          Item: marshall({ chargeId, ...order, chargedAt: new Date().toISOString() }),
        }),
      );
      await sendCharged(config, order.orderId, chargeId);
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
  /**
   * How "order charged" leaves (with `charged`): `outbox` (default) publishes at the commit (`ctx.publish`: the
   * guard's `outbox` option must be set), `direct` sends it from the handler, as a handler without an outbox would.
   */
  publish?: "outbox" | "direct";
}

/**
 * Guard on: the order is charged with `Idempotency-Key: ctx.effectKey("charge")` (every retry, takeover and
 * redelivery of the order sends the same key, so the API makes one charge and replays it), and its row is written
 * in the same DynamoDB transaction as the guard's commit (exactly once, not just deduplicated), plus a visibility
 * heartbeat so a slow charge is not handed to a second consumer in the first place. Failures are reported per
 * message (ReportBatchItemFailures).
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
      const chargeId = await chargeOrder(config, order, {
        idempotencyKey: ctx.effectKey("charge"),
        signal: ctx.signal,
      });
      charges.putAtCommit(ctx, { chargeId, ...order, chargedAt: new Date().toISOString() });
      if (config.charged && config.publish === "direct") {
        // Sent now: a run that then fails (or loses its lease, or its commit) has sent, and its retry sends again.
        await sendCharged(config, order.orderId, chargeId);
      } else if (config.charged) {
        ctx.publish({ kind: "sqs", queueUrl: config.charged.queueUrl }, { orderId: order.orderId, chargeId });
      }
      // After the charge and "order charged", before the commit: sometimes slow, sometimes the run dies here.
      await faultPoint();
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
