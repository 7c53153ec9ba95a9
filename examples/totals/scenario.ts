import { CreateTableCommand, DeleteItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { Scenario, ScenarioResult } from "../../src/cli/demo/scenario.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { createPrng } from "../../src/sim/prng.js";
import { countBy, forEachLimited, localStateStore, quietObservability, scanAll } from "../shared/demo-kit.js";
import { guardedTotalsHandler, naiveTotalsHandler } from "./handler.js";

/** Demo size at scale 1: 40 orders of 8 customers, each corrected once or twice, one in five cancelled. */
const ORDERS = 40;
const CUSTOMERS = 8;

export const totalsScenario: Scenario = {
  name: "totals",
  foldsIntoDynamoDB: true,
  title: "totals — project an orders table's changes into per-customer totals (DynamoDB Streams → Lambda)",
  description:
    `${ORDERS} orders of ${CUSTOMERS} customers are written to an orders table, then corrected (new amounts) and ` +
    "some cancelled (deleted); the table's stream (new and old images) feeds a function that moves each customer's " +
    "total by the change and keeps a view of each order. Faults: some runs fail after their writes (Lambda retries " +
    "the batch from its first record), some are slow past the timeout and write later (zombies), some batches are " +
    "invoked twice. Guard off, retried batches count changes twice and a zombie writes an old amount over a newer " +
    "one. Guard on, each change is an event of its order ordered by its sequence number, and the total's ADD, the " +
    "view's fenced put and the ledger row are folded into the commit: every total exact, every view current.",
  expectedRuns: (scale) => Math.round((ORDERS * scale * 2.4) / 2),
  async run(ctx): Promise<ScenarioResult> {
    const { runtime } = ctx;
    const ddb = runtime.dynamodbClient();
    const orders = `${ctx.prefix}-orders`;
    const tables = {
      totalsTable: `${ctx.prefix}-totals`,
      viewTable: `${ctx.prefix}-order-view`,
      ledgerTable: `${ctx.prefix}-ledger`,
    };
    const created = await ddb.send(
      new CreateTableCommand({
        TableName: orders,
        AttributeDefinitions: [{ AttributeName: "orderId", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "orderId", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
        StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
      }),
    );
    await createTableIfMissing(ddb, tables.totalsTable, "customerId");
    await createTableIfMissing(ddb, tables.viewTable, "orderId");
    await createTableIfMissing(ddb, tables.ledgerTable, "applyId");
    const config = { dynamodb: ddb, ...tables };
    const handler = ctx.guard
      ? guardedTotalsHandler({
          ...config,
          store: await localStateStore(ctx, `${ctx.prefix}-state`),
          options: { ...quietObservability(), leaseMs: 1500, waitIntervalMs: 50, maxWaitIntervalMs: 300 },
        })
      : naiveTotalsHandler(config);
    const fn = runtime.fn({
      name: `${ctx.functionPrefix}-totals`,
      handler,
      timeoutMs: 1000,
      concurrency: 4,
      faults: { slowRate: 0.15, slowMs: 1500, failAfterRate: 0.15, faultyAttempts: 2 },
    });
    const reader = await runtime.dynamodbStreamReader(created.TableDescription?.LatestStreamArn ?? "");
    runtime.streamEventSource(fn, reader, {
      batchSize: 4,
      parallelizationFactor: 2,
      faults: { duplicateRate: 0.1 },
    });

    // The producer's plan first (the writes run four at a time, so their draws must not depend on timing): each
    // order written, corrected once or twice, one in five cancelled; every write changes the item.
    const prng = createPrng(ctx.seed).fork("totals-producer");
    const count = Math.max(2, Math.round(ORDERS * ctx.scale));
    const plans = Array.from({ length: count }, (_, i) => {
      const amounts = [100 * prng.int(1, 50)];
      for (let c = prng.int(1, 2); c > 0; c--) amounts.push((amounts.at(-1) ?? 0) + 100 * prng.int(1, 9));
      return {
        orderId: `order-${String(i).padStart(4, "0")}`,
        customerId: `customer-${i % CUSTOMERS}`,
        amounts,
        cancelled: prng.chance(0.2),
      };
    });
    const live = new Map<string, number>();
    const expected = new Map<string, number>();
    for (const p of plans) {
      if (!p.cancelled) live.set(p.orderId, p.amounts.at(-1) ?? 0);
      expected.set(p.customerId, (expected.get(p.customerId) ?? 0) + (live.get(p.orderId) ?? 0));
    }
    const changes = plans.reduce((n, p) => n + p.amounts.length + (p.cancelled ? 1 : 0), 0);
    await forEachLimited(plans, 4, async ({ orderId, customerId, amounts, cancelled }) => {
      for (const amountCents of amounts) {
        const Item = marshall({ orderId, customerId, amountCents });
        await ddb.send(new PutItemCommand({ TableName: orders, Item }));
      }
      if (cancelled) await ddb.send(new DeleteItemCommand({ TableName: orders, Key: marshall({ orderId }) }));
    });
    await runtime.idle();

    // Counted in the tables: the ledger (one row per change applied), the totals and the view.
    const ledger = await scanAll(ddb, tables.ledgerTable);
    const perChange = countBy(ledger, (r) => String(r.change));
    let duplicateEffects = 0;
    for (const n of perChange.values()) duplicateEffects += n - 1;
    const totals = new Map(
      (await scanAll(ddb, tables.totalsTable)).map((r) => [String(r.customerId), Number(r.totalCents)]),
    );
    const wrongTotals = [...expected].filter(([c, cents]) => (totals.get(c) ?? 0) !== cents).length;
    const view = new Map((await scanAll(ddb, tables.viewTable)).map((r) => [String(r.orderId), r]));
    const staleResults = plans.filter(({ orderId }) => {
      const row = view.get(orderId);
      const shown = row === undefined || row.deleted === true ? undefined : Number(row.amountCents);
      return shown !== live.get(orderId);
    }).length;
    const lostEvents = Math.max(0, changes - perChange.size);
    const redelivered = runtime.trace.events.filter(
      (e) => e.type === "delivery" && e.functionName === fn.name && (e.attempt > 1 || e.duplicate),
    ).length;
    return {
      measured: { distinctEvents: changes, duplicateEffects, staleResults, lostEvents },
      details: {
        orders: count,
        "changes (stream records)": changes,
        "ledger rows": ledger.length,
        "customers with a wrong total": wrongTotals,
        "batches retried or invoked twice": redelivered,
        discarded: runtime.trace.events.filter((e) => e.type === "dead-letter" && e.functionName === fn.name)
          .length,
      },
      notes: [
        `${changes} changes → ${ledger.length} applied; ${wrongTotals} of ${expected.size} customers' totals are wrong, ` +
          `${staleResults} of ${count} order views are not the order's latest state.`,
        "Lambda retries a failed stream batch from its first record (or the first one the function reports), so " +
          "everything after it runs again: without the guard, each retry counts those changes again.",
      ],
    };
  },
};
