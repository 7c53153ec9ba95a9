import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { StateStore } from "../../src/core/store.js";
import { updateEffect } from "../../src/engines/dynamodb/sink.js";
import { sqsHandler } from "../../src/lambda/handlers.js";

/**
 * Inventory counted exactly once: each sale message takes `quantity` from the product's stock. A counter is the
 * effect a fenced put cannot express (it adds to what is there), and the one a redelivery doubles: a plain
 * `UpdateItem … ADD` retried after a lost response, a timeout or a second consumer takes the stock twice.
 *
 * Here the ADD is folded into the guard's commit (one TransactWriteItems with the state update), so it lands once
 * per sale id, whatever the redeliveries. The condition `stock >= quantity` keeps stock from going negative; a sale
 * it refuses is not committed (`onConditionFailed: "abort"`): the delivery fails and the queue's redrive policy
 * dead-letters it, for someone to look at.
 *
 * Stock table: `sku` (hash key), `stock` (number), `sold` (number).
 */
export interface Sale {
  saleId: string;
  sku: string;
  quantity: number;
}

export interface InventoryConfig {
  dynamodb: DynamoDBClient;
  stockTable: string;
  store: StateStore;
}

export function parseSale(body: string): Sale {
  const sale = JSON.parse(body) as Partial<Sale>;
  if (
    typeof sale.saleId !== "string" ||
    typeof sale.sku !== "string" ||
    !Number.isSafeInteger(sale.quantity)
  ) {
    throw new Error(`not a sale: ${body.slice(0, 200)}`);
  }
  return sale as Sale;
}

export function inventoryHandler(config: InventoryConfig) {
  return sqsHandler(
    async (event, ctx) => {
      if (event.kind !== "message") return undefined;
      const sale = parseSale(event.body);
      ctx.atCommit(
        updateEffect({
          tableName: config.stockTable,
          key: { sku: sale.sku },
          add: { stock: -sale.quantity, sold: sale.quantity },
          condition: { expression: "stock >= :quantity", values: { ":quantity": sale.quantity } },
          onConditionFailed: "abort",
          description: `sell ${sale.quantity} × ${sale.sku}`,
        }),
      );
      return { saleId: sale.saleId };
    },
    {
      store: config.store,
      messages: "accept",
      // One sale is one event: its id is the idempotency key, and sales of one product need no order among them.
      subject: (m) => parseSale(m.body).saleId,
      identity: (m) => parseSale(m.body).saleId,
    },
  );
}
