import type { Scenario, ScenarioResult } from "../../src/cli/demo/scenario.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { createPrng } from "../../src/sim/prng.js";
import { countBy, forEachLimited, localStateStore, quietObservability, scanAll } from "../shared/demo-kit.js";
import { guardedOrdersHandler, naiveOrdersHandler } from "./handler.js";
import type { Order } from "./order.js";
import { sendOrder } from "./producer.js";

/** Demo size at scale 1: 60 orders, half through a standard queue, half through a FIFO queue. */
const ORDERS = 60;
/** Seconds: shorter than the slow charges (3.5 s), the misconfiguration of the article. */
const VISIBILITY_TIMEOUT_S = 2;

export const ordersScenario: Scenario = {
  name: "orders",
  foldsIntoDynamoDB: true,
  title: "orders — charge each order once (SQS → Lambda → DynamoDB)",
  description:
    "Orders go to an SQS queue (half of them to a FIFO queue, sent with the FIFO dedup-id helper) whose " +
    `visibility timeout (${VISIBILITY_TIMEOUT_S} s) is shorter than some charges take (3.5 s); the function ` +
    "records a charge per order in DynamoDB. Faults: the producer resends some orders, some batches arrive " +
    "twice, some runs fail after charging. Guard off, an order that reappears while it is being charged is " +
    "charged again. Guard on (plus the visibility heartbeat), the charge is written in the guard's commit " +
    "transaction: each order once.",
  expectedRuns: (scale) => Math.round((ORDERS * scale * 1.3) / 2),
  async run(ctx): Promise<ScenarioResult> {
    const { runtime } = ctx;
    const ddb = runtime.dynamodbClient();
    const sqs = runtime.sqsClient();
    const table = `${ctx.prefix}-charges`;
    await createTableIfMissing(ddb, table, "chargeId");
    const queueOptions = { visibilityTimeoutS: VISIBILITY_TIMEOUT_S, maxReceiveCount: 5 };
    const standard = await runtime.createQueue(`${ctx.prefix}-orders`, queueOptions);
    const fifo = await runtime.createQueue(`${ctx.prefix}-orders.fifo`, { ...queueOptions, fifo: true });
    const config = { dynamodb: ddb, chargesTable: table };
    const handler = ctx.guard
      ? guardedOrdersHandler({
          ...config,
          store: await localStateStore(ctx, `${ctx.prefix}-state`),
          sqsClient: sqs,
          visibilityTimeoutSeconds: 4,
          intervalSeconds: 1,
          options: { ...quietObservability(), leaseMs: 3000, waitIntervalMs: 50, maxWaitIntervalMs: 400 },
        })
      : naiveOrdersHandler(config);
    const fn = runtime.fn({
      name: `${ctx.functionPrefix}-orders`,
      handler,
      timeoutMs: 8000,
      concurrency: 10,
      faults: { slowRate: 0.3, slowMs: 3500, failAfterRate: 0.1, failBeforeRate: 0.03 },
    });
    const sourceOptions = { batchSize: 3, faults: { duplicateRate: 0.1, reorderWindowMs: 200 } };
    runtime.sqsEventSource(fn, { ...sourceOptions, queueUrl: standard.url, queueArn: standard.arn });
    runtime.sqsEventSource(fn, { ...sourceOptions, queueUrl: fifo.url, queueArn: fifo.arn });

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

    // Counted in the charges table and the dead-letter queues.
    const charges = await scanAll(ddb, table);
    const perOrder = countBy(charges, (c) => String(c.orderId));
    let duplicateEffects = 0;
    for (const n of perOrder.values()) duplicateEffects += n - 1;
    const lostEvents = orders.filter((o) => !perOrder.has(o.orderId)).length;
    const dead =
      (standard.dlq ? await runtime.queueDepth(standard.dlq.url) : 0) +
      (fifo.dlq ? await runtime.queueDepth(fifo.dlq.url) : 0);
    const doubleCharged = (url: string) =>
      orders.filter(
        (o, i) => (i % 2 === 0 ? standard.url : fifo.url) === url && (perOrder.get(o.orderId) ?? 0) > 1,
      ).length;
    const redelivered = runtime.trace.events.filter(
      (e) => e.type === "delivery" && e.functionName === fn.name && e.attempt > 1,
    ).length;
    return {
      measured: { distinctEvents: orders.length, duplicateEffects, staleResults: 0, lostEvents },
      details: {
        orders: orders.length,
        "producer resends": resends.filter(Boolean).length,
        charges: charges.length,
        "orders charged twice or more (standard queue)": doubleCharged(standard.url),
        "orders charged twice or more (FIFO queue)": doubleCharged(fifo.url),
        "batches redelivered (receive count > 1)": redelivered,
        "dead-lettered": dead,
      },
      notes: [
        `${orders.length} orders → ${charges.length} charges; ${perOrder.size} orders charged at least once.`,
        "The FIFO queue drops the producer's resends (same MessageDeduplicationId) but not the redelivery of a " +
          "message whose visibility timeout ran out while it was being charged.",
      ],
    };
  },
};
