import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import type { Scenario, ScenarioResult, ScenarioRunContext } from "../../src/cli/demo/scenario.js";
import { DynamoDBOutbox } from "../../src/engines/dynamodb/outbox.js";
import { createOutboxTable } from "../../src/engines/dynamodb/outbox-schema.js";
import { outboxStreamHandler } from "../../src/engines/dynamodb/outbox-stream-relay.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { type LocalPaymentsServer, startPaymentsServer } from "../../src/local/emulators/payments-server.js";
import { awsOutboxSender } from "../../src/outbox/aws-sender.js";
import { createPrng } from "../../src/sim/prng.js";
import { countBy, forEachLimited, localStateStore, quietObservability, scanAll } from "../shared/demo-kit.js";
import { guardedFulfilmentHandler, naiveFulfilmentHandler } from "./fulfilment.js";
import { guardedOrdersHandler, naiveOrdersHandler } from "./handler.js";
import type { Order } from "./order.js";
import { sendOrder } from "./producer.js";

/** Demo size at scale 1: 60 orders, half through a standard queue, half through a FIFO queue. */
const ORDERS = 60;
/** Seconds: shorter than the slow charges (3.5 s), the misconfiguration of the article. */
const VISIBILITY_TIMEOUT_S = 2;
/** The payments API's faults: some answers lost after the charge was made, some requests failing before. */
const PAYMENTS_FAULTS = { lostResponseRate: 0.15, failRate: 0.1 };

export const ordersScenario: Scenario = {
  name: "orders",
  foldsIntoDynamoDB: true,
  title:
    "orders — charge each order once, ship it once (SQS → Lambda → payments API + DynamoDB → SQS → Lambda)",
  description:
    "Orders go to an SQS queue (half of them to a FIFO queue, sent with the FIFO dedup-id helper) whose " +
    `visibility timeout (${VISIBILITY_TIMEOUT_S} s) is shorter than some charges take (3.5 s); the function ` +
    "charges each order at a payments API and records the charge in DynamoDB. Faults: the producer resends some " +
    "orders, some batches arrive twice, some runs fail after charging, the API loses some answers (the charge " +
    "made) and fails some requests; the client sends a charge again when its answer is lost. Guard off, the " +
    "charge has no idempotency key: an order that reappears while it is being charged, a resend after a lost " +
    "answer, a redelivery after a failed run is charged again at the provider. Guard on (plus the visibility " +
    'heartbeat), the charge carries Idempotency-Key: ctx.effectKey("charge"), so the API replays the first ' +
    "charge, and its row is written in the guard's commit transaction: each order charged once. Each charged order " +
    'is then published as "order charged" to a fulfilment pipeline that ships it (a shipment row). Guard off, the ' +
    "orders function sends it itself: every run that charged sends it, so retried runs ship twice. Guard on, it is " +
    "published at the commit (ctx.publish: an outbox entry in the same transaction), sent by a relay on the outbox " +
    "table's stream (its runs fail after sending, so it sends again), and the guarded fulfilment pipeline takes the " +
    "relay's message id as the message's identity: each order shipped once.",
  expectedRuns: (scale) => Math.round(ORDERS * scale * 1.3),
  async run(ctx): Promise<ScenarioResult> {
    // A payments API of this run's own (its charges are this run's alone), its faults seeded by the demo's seed.
    const payments = await startPaymentsServer({ seed: ctx.seed, faults: PAYMENTS_FAULTS });
    try {
      return await runOrders(ctx, payments, "outbox");
    } finally {
      await payments.stop();
    }
  },
};

/**
 * The orders scenario whose guarded orders function sends "order charged" from its handler (`direct`) instead of
 * publishing it at the commit: what a guarded pipeline without an outbox does (test/examples/orders-chain.test.ts
 * shows the double shipments it leaves downstream). Guard off is the same as the demo's.
 */
export function ordersScenarioPublishing(
  publish: "outbox" | "direct",
  faults: { crashRate?: number } = {},
): Scenario {
  return {
    ...ordersScenario,
    async run(ctx) {
      const payments = await startPaymentsServer({ seed: ctx.seed, faults: PAYMENTS_FAULTS });
      try {
        return await runOrders(ctx, payments, publish, faults.crashRate);
      } finally {
        await payments.stop();
      }
    },
  };
}

async function runOrders(
  ctx: ScenarioRunContext,
  payments: LocalPaymentsServer,
  publish: "outbox" | "direct",
  crashRate = 0.05,
): Promise<ScenarioResult> {
  const { runtime } = ctx;
  const ddb = runtime.dynamodbClient();
  const sqs = runtime.sqsClient();
  const table = `${ctx.prefix}-charges`;
  await createTableIfMissing(ddb, table, "chargeId");
  const queueOptions = { visibilityTimeoutS: VISIBILITY_TIMEOUT_S, maxReceiveCount: 5 };
  const standard = await runtime.createQueue(`${ctx.prefix}-orders`, queueOptions);
  const fifo = await runtime.createQueue(`${ctx.prefix}-orders.fifo`, { ...queueOptions, fifo: true });
  const shipmentsTable = `${ctx.prefix}-shipments`;
  await createTableIfMissing(ddb, shipmentsTable, "shipmentId");
  const charged = await runtime.createQueue(`${ctx.prefix}-charged`, queueOptions);
  const config = {
    dynamodb: ddb,
    chargesTable: table,
    paymentsUrl: payments.endpoint,
    charged: { queueUrl: charged.url, sqs },
  };
  const relay = ctx.guard && publish === "outbox" ? await startRelay(ctx, `${ctx.prefix}-outbox`) : undefined;
  const outbox = relay?.outbox;
  const relayRetries = () =>
    runtime.trace.events.filter(
      (e) => e.type === "delivery" && e.functionName === relay?.functionName && e.attempt > 1,
    ).length;
  const handler = ctx.guard
    ? guardedOrdersHandler({
        ...config,
        store: await localStateStore(ctx, `${ctx.prefix}-state`),
        sqsClient: sqs,
        publish,
        visibilityTimeoutSeconds: 4,
        intervalSeconds: 1,
        options: {
          ...quietObservability(),
          leaseMs: 3000,
          waitIntervalMs: 50,
          maxWaitIntervalMs: 400,
          ...(outbox ? { outbox } : {}),
        },
      })
    : naiveOrdersHandler(config);
  const fn = runtime.fn({
    name: `${ctx.functionPrefix}-orders`,
    handler,
    timeoutMs: 8000,
    concurrency: 10,
    faults: { slowRate: 0.3, slowMs: 3500, failAfterRate: 0.1, failBeforeRate: 0.03, crashRate },
  });
  const sourceOptions = { batchSize: 3, faults: { duplicateRate: 0.1, reorderWindowMs: 200 } };
  runtime.sqsEventSource(fn, { ...sourceOptions, queueUrl: standard.url, queueArn: standard.arn });
  runtime.sqsEventSource(fn, { ...sourceOptions, queueUrl: fifo.url, queueArn: fifo.arn });
  const fulfilmentConfig = { dynamodb: ddb, shipmentsTable };
  const fulfilment = runtime.fn({
    name: `${ctx.functionPrefix}-fulfilment`,
    handler: ctx.guard
      ? guardedFulfilmentHandler({
          ...fulfilmentConfig,
          store: await localStateStore(ctx, `${ctx.prefix}-fulfilment-state`),
          options: { ...quietObservability(), leaseMs: 3000, waitIntervalMs: 50, maxWaitIntervalMs: 400 },
        })
      : naiveFulfilmentHandler(fulfilmentConfig),
    timeoutMs: 4000,
    concurrency: 4,
    faults: { slowRate: 0.2, slowMs: 2500, failAfterRate: 0.1 },
  });
  runtime.sqsEventSource(fulfilment, { ...sourceOptions, queueUrl: charged.url, queueArn: charged.arn });

  const prng = createPrng(ctx.seed).fork("orders-producer");
  const orders: Order[] = Array.from({ length: Math.max(2, Math.round(ORDERS * ctx.scale)) }, (_, i) => ({
    orderId: `order-${String(i).padStart(4, "0")}`,
    customerId: `customer-${i % 10}`,
    amountCents: 500 + prng.int(0, 9500),
  }));
  const resends = orders.map(() => prng.chance(0.15));
  await forEachLimited(orders, 4, async (order, i) => {
    await sendOrder(sqs, i % 2 === 0 ? standard.url : fifo.url, order, resends[i] ?? false);
  });
  await runtime.idle();

  // Counted at both ends: the charges the payments API made (what the customer pays), and the charges table's rows
  // (what the shop believes it charged), plus the dead-letter queues.
  const provider = countBy(
    payments.charges.filter((c) => c.orderId !== null),
    (c) => String(c.orderId),
  );
  const rows = await scanAll(ddb, table);
  const perOrder = countBy(rows, (c) => String(c.orderId));
  const shipments = await scanAll(ddb, shipmentsTable);
  const shipped = countBy(shipments, (c) => String(c.orderId));
  const beyondOne = (counts: Map<string, number>) => {
    let n = 0;
    for (const c of counts.values()) n += c - 1;
    return n;
  };
  // The double charge the customer sees (charges at the provider beyond one per order) and the double shipment
  // (shipments beyond one per order, downstream of "order charged").
  const duplicateEffects = beyondOne(provider) + beyondOne(shipped);
  const lostEvents = orders.filter(
    (o) => !provider.has(o.orderId) || !perOrder.has(o.orderId) || !shipped.has(o.orderId),
  ).length;
  const dead =
    (standard.dlq ? await runtime.queueDepth(standard.dlq.url) : 0) +
    (fifo.dlq ? await runtime.queueDepth(fifo.dlq.url) : 0);
  const doubleCharged = (url: string) =>
    orders.filter(
      (o, i) => (i % 2 === 0 ? standard.url : fifo.url) === url && (provider.get(o.orderId) ?? 0) > 1,
    ).length;
  const redelivered = runtime.trace.events.filter(
    (e) => e.type === "delivery" && e.functionName === fn.name && e.attempt > 1,
  ).length;
  const chargeRequests = payments.requests.filter((r) => r.method === "POST");
  return {
    measured: { distinctEvents: orders.length, duplicateEffects, staleResults: 0, lostEvents },
    details: {
      orders: orders.length,
      "producer resends": resends.filter(Boolean).length,
      "charges at the provider": payments.charges.length,
      "charge rows": rows.length,
      "charge rows beyond one per order": beyondOne(perOrder),
      "orders charged twice or more at the provider (standard queue)": doubleCharged(standard.url),
      "orders charged twice or more at the provider (FIFO queue)": doubleCharged(fifo.url),
      "charge requests": chargeRequests.length,
      "answers lost (charge made or replayed)": chargeRequests.filter((r) => r.lost).length,
      "charges replayed (same idempotency key)": chargeRequests.filter((r) => r.outcome === "replayed")
        .length,
      "charge requests failed (500)": chargeRequests.filter((r) => r.outcome === "failed-before").length,
      "batches redelivered (receive count > 1)": redelivered,
      "dead-lettered": dead,
      shipments: shipments.length,
      "shipments beyond one per order": beyondOne(shipped),
      "orders not shipped": orders.filter((o) => !shipped.has(o.orderId)).length,
      "order-charged sends by the relay": relay?.handler.counts.sent ?? 0,
      "relay runs that failed after sending (batch sent again)": relayRetries(),
    },
    notes: [
      `${orders.length} orders → ${payments.charges.length} charges at the payments API, ${rows.length} charge ` +
        `rows; ${provider.size} orders charged at least once.`,
      "A lost answer leaves the charge made at the provider but no row for it: without a key, the client's resend " +
        "charges the order again, so the provider can hold more charges than the shop has rows.",
      'Guard off, "order charged" is sent by every run that charged, so a retried run ships the order again; guard ' +
        "on, it exists only for the committed run (the outbox entry is in the commit) and every resend of it by the " +
        "relay carries the same eonceMessageId, which the guarded fulfilment pipeline takes as the message's identity.",
      "The FIFO queue drops the producer's resends (same MessageDeduplicationId) but not the redelivery of a " +
        "message whose visibility timeout ran out while it was being charged.",
    ],
  };
}

/**
 * The outbox of the orders pipeline and its relay as deployed: a function on the outbox table's stream
 * (`outboxStreamHandler`, the CDK construct's `outbox` relay) sending each entry to its queue. Its runs sometimes fail
 * after sending, and the stream's batches are sometimes delivered twice: the relay sends such entries again, under
 * their ids.
 */
async function startRelay(ctx: ScenarioRunContext, tableName: string) {
  const { runtime } = ctx;
  const client = runtime.dynamodbClient();
  await createOutboxTable(client, { tableName });
  const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
  const outbox = new DynamoDBOutbox({ client, tableName });
  const handler = outboxStreamHandler({ outbox, sender: awsOutboxSender({ sqs: runtime.sqsClient() }) });
  const fn = runtime.fn({
    name: `${ctx.functionPrefix}-outbox-relay`,
    handler,
    timeoutMs: 4000,
    concurrency: 2,
    faults: { failAfterRate: 0.2, faultyAttempts: 2 },
  });
  const reader = await runtime.dynamodbStreamReader(described.Table?.LatestStreamArn ?? "");
  runtime.streamEventSource(fn, reader, { batchSize: 5, faults: { duplicateRate: 0.1 } });
  return { outbox, handler, functionName: fn.name };
}
