import { randomUUID } from "node:crypto";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inventoryHandler, type Sale } from "../../examples/inventory/handler.js";
import { createStateTable, createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { lambdaContext, localDynamoDB, sqsEvent, sqsRecord } from "../kit/index.js";

describe("inventory example: stock counted exactly once", () => {
  const dynamodb = localDynamoDB();
  const suffix = randomUUID().slice(0, 8);
  const stockTable = `stock-${suffix}`;
  let handler: ReturnType<typeof inventoryHandler>;

  beforeAll(async () => {
    await createStateTable(dynamodb, { tableName: `inventory-state-${suffix}` });
    await createTableIfMissing(dynamodb, stockTable, "sku");
    const store = new DynamoDBStore({ client: dynamodb, tableName: `inventory-state-${suffix}` });
    handler = inventoryHandler({ dynamodb, stockTable, store });
  });
  afterAll(() => dynamodb.destroy());

  const stockOf = async (sku: string) => {
    const out = await dynamodb.send(
      new GetItemCommand({ TableName: stockTable, Key: marshall({ sku }), ConsistentRead: true }),
    );
    return out.Item ? unmarshall(out.Item) : undefined;
  };
  const deliver = (...sales: Sale[]) =>
    handler(sqsEvent(...sales.map((s) => sqsRecord(s))) as never, lambdaContext());

  it("duplicates and redeliveries take the stock once per sale; a sale beyond the stock is failed, not taken", async () => {
    const sku = `sku-${randomUUID()}`;
    await dynamodb.send(
      new PutItemCommand({ TableName: stockTable, Item: marshall({ sku, stock: 10, sold: 0 }) }),
    );
    const a: Sale = { saleId: randomUUID(), sku, quantity: 3 };
    const b: Sale = { saleId: randomUUID(), sku, quantity: 4 };
    const tooMany: Sale = { saleId: randomUUID(), sku, quantity: 5 };
    expect((await deliver(a, b, a)).batchItemFailures).toEqual([]);
    expect((await deliver(b, a)).batchItemFailures).toEqual([]); // redelivered: acknowledged, nothing taken
    const refused = await deliver(tooMany);
    expect(refused.batchItemFailures).toHaveLength(1); // only 3 left: failed for the redrive policy
    expect(await stockOf(sku)).toEqual({ sku, stock: 3, sold: 7 });
    const c: Sale = { saleId: randomUUID(), sku, quantity: 3 };
    expect((await deliver(c, c)).batchItemFailures).toEqual([]);
    expect(await stockOf(sku)).toEqual({ sku, stock: 0, sold: 10 });
  });
});
