import type { SQSBatchResponse } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quietObservability } from "../../examples/shared/demo-kit.js";
import { chargeWithKey } from "../../examples/shared/payments.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import { LocalRuntime } from "../../src/local/runtime.js";
import { sqsEvent, sqsRecord } from "../kit/events.js";

let runtime: LocalRuntime;

beforeAll(async () => {
  // Only the payments API: no DynamoDB, S3 or SQS (the guard's state is in memory).
  runtime = await LocalRuntime.start({
    seed: 11,
    services: { dynamodb: false, s3: false, sqs: false, payments: true },
  });
});
afterAll(async () => {
  await runtime?.stop();
});

interface Order {
  orderId: string;
  customerId: string;
  amountCents: number;
}

/**
 * A guarded SQS handler charging each order through the payments API, with the event's effect key or without one.
 * The charge is an API call, not a write folded into the commit: the guard alone cannot make it once.
 */
function chargingHandler(keyed: boolean) {
  const url = runtime.env().PAYMENTS_API_URL ?? "";
  return sqsHandler(
    async (event, ctx) => {
      if (event.kind !== "message") return undefined;
      const order = JSON.parse(event.body) as Order;
      const { charge } = await chargeWithKey(
        url,
        { ...order, currency: "eur" },
        keyed ? { idempotencyKey: ctx.effectKey("charge") } : {},
      );
      return charge.id;
    },
    {
      store: new MemoryStore(),
      messages: "accept",
      subject: (m) => (JSON.parse(m.body) as Order).orderId,
      identity: (m) => (JSON.parse(m.body) as Order).orderId,
      ...quietObservability(),
    },
  );
}

/**
 * Delivers each order until a run succeeds with no failed item, as SQS redelivers: lost answers of the API fail a
 * run after its charge was made (the handler throws, the guard releases), and the function fails after its runs.
 */
async function deliverAll(name: string, keyed: boolean, orders: Order[]): Promise<void> {
  const fn = runtime.fn({
    name,
    handler: chargingHandler(keyed),
    faults: { failAfterRate: 0.3, faultyAttempts: 100 },
  });
  for (const order of orders) {
    const messageId = `m-${order.orderId}`;
    let attempt = 0;
    for (;;) {
      attempt++;
      expect(attempt).toBeLessThan(50);
      const record = sqsRecord(JSON.stringify(order), { messageId, receiveCount: attempt });
      const run = await fn.invoke(sqsEvent(record), { attempt });
      const failures = (run.result as SQSBatchResponse | undefined)?.batchItemFailures;
      if (run.status === "succeeded" && failures?.length === 0) break;
    }
  }
}

/** Charges per order id, from the API's own list. */
async function chargesPerOrder(prefix: string): Promise<Map<string, number>> {
  const res = await fetch(`${runtime.env().PAYMENTS_API_URL}/v1/charges`);
  const { data } = (await res.json()) as { data: { orderId: string | null }[] };
  const counts = new Map<string, number>();
  for (const c of data) {
    if (c.orderId?.startsWith(prefix)) counts.set(c.orderId, (counts.get(c.orderId) ?? 0) + 1);
  }
  return counts;
}

const ordersOf = (prefix: string) =>
  Array.from({ length: 12 }, (_, i) => ({
    orderId: `${prefix}${i}`,
    customerId: `cus_${i}`,
    amountCents: 100 + i,
  }));

describe("an API call with ctx.effectKey under retries (local runtime, payments API)", () => {
  it("serves the payments API at PAYMENTS_API_URL on 127.0.0.1", () => {
    expect(runtime.payments?.address).toBe("127.0.0.1");
    expect(runtime.env().PAYMENTS_API_URL).toBe(runtime.payments?.endpoint);
  });

  it("charges each order once with the key, and some orders more than once without it", async () => {
    runtime.payments?.injectFaults({ lostResponseRate: 0.35 });
    await deliverAll("charge-keyed", true, ordersOf("keyed-"));
    await deliverAll("charge-unkeyed", false, ordersOf("unkeyed-"));
    runtime.payments?.injectFaults({});
    const lost = runtime.payments?.requests.filter((r) => r.lost) ?? [];
    expect(lost.some((r) => r.idempotencyKey !== null)).toBe(true); // the keyed runs met lost answers too

    const keyed = await chargesPerOrder("keyed-");
    expect(keyed.size).toBe(12);
    expect([...keyed.values()].every((n) => n === 1)).toBe(true);

    const unkeyed = await chargesPerOrder("unkeyed-");
    expect(unkeyed.size).toBe(12);
    const total = [...unkeyed.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(12); // a lost answer, then the retry: a second charge
  });
});
