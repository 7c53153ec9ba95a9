import { randomUUID } from "node:crypto";
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EffectRefusedError, OptionsError, TransactionLimitError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { createStateTable, createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink, updateEffect } from "../../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../../src/engines/dynamodb/store.js";
import { localDynamoDB } from "../../kit/index.js";

/** DynamoDB effects beyond a put: composite keys, updates folded into the commit, and the transaction limits. */
describe("DynamoDB effects", () => {
  let client: DynamoDBClient;
  let store: DynamoDBStore;
  let counters: string;
  let composite: string;
  const p = positionFromNumber;

  beforeAll(async () => {
    client = localDynamoDB();
    const suffix = randomUUID().slice(0, 8);
    counters = `counters-${suffix}`;
    composite = `composite-${suffix}`;
    await createStateTable(client, { tableName: `state-${suffix}` });
    await createTableIfMissing(client, counters, "pk");
    await createTableIfMissing(client, composite, "pk", "sk");
    store = new DynamoDBStore({ client, tableName: `state-${suffix}` });
  });
  afterAll(() => client?.destroy());

  const row = async (table: string, key: Record<string, string>) => {
    const out = await client.send(
      new GetItemCommand({ TableName: table, Key: marshall(key), ConsistentRead: true }),
    );
    return out.Item ? unmarshall(out.Item) : undefined;
  };
  const guard = () => createGuard({ store, leaseMs: 5_000 });

  it("a fenced sink on a composite key orders the rows of one (pk, sk) and keeps other sort keys apart", async () => {
    const sink = new DynamoDBFencedSink({ client, tableName: composite, sortKeyAttribute: "sk" });
    const pk = `user-${randomUUID()}`;
    expect(await sink.put({ position: p(2), fence: 1 }, { pk, sk: "a", v: "new" })).toBe("applied");
    expect(await sink.put({ position: p(1), fence: 2 }, { pk, sk: "a", v: "old" })).toBe("stale");
    expect(await sink.put({ position: p(1), fence: 2 }, { pk, sk: "b", v: "other" })).toBe("applied");
    expect(await sink.get({ pk, sk: "a" })).toMatchObject({ v: "new", srcPos: p(2) });
    expect(await sink.get({ pk, sk: "b" })).toMatchObject({ v: "other", srcPos: p(1) });
    expect(await sink.tombstone({ position: p(3), fence: 3 }, { pk, sk: "a" })).toBe("applied");
    expect(await sink.get({ pk, sk: "a" })).toMatchObject({ deleted: true, srcPos: p(3) });
    expect(() => sink.putRequest({ position: p(4), fence: 4 }, { pk, v: "no sort key" })).toThrow(/"sk"/);
  });

  it("an ADD folded into the commit counts each event once, whatever the redeliveries", async () => {
    const g = guard();
    const pk = `stock-${randomUUID()}`;
    const deliver = (n: number) =>
      g.run({ subject: `orders/${n}`, identity: `order-${n}` }, async (ctx) => {
        ctx.atCommit(updateEffect({ tableName: counters, key: { pk }, add: { sold: 2, orders: 1 } }));
        return n;
      });
    const outcomes = [];
    for (const n of [1, 2, 1, 3, 2, 1]) outcomes.push((await deliver(n)).status);
    expect(outcomes).toEqual(["processed", "processed", "duplicate", "processed", "duplicate", "duplicate"]);
    expect(await row(counters, { pk })).toEqual({ pk, sold: 6, orders: 3 });
  });

  it("a user condition that fails: skip commits without the write (refused); abort fails the delivery", async () => {
    const g = guard();
    const pk = `stock-${randomUUID()}`;
    await client.send(new PutItemCommand({ TableName: counters, Item: marshall({ pk, stock: 3 }) }));
    const take = (id: string, qty: number, onConditionFailed: "skip" | "abort") =>
      g.run({ subject: id, identity: id }, async (ctx) => {
        ctx.atCommit(
          updateEffect({
            tableName: counters,
            key: { pk },
            add: { stock: -qty },
            condition: { expression: "stock >= :qty", values: { ":qty": qty } },
            onConditionFailed,
          }),
        );
        return qty;
      });
    const first = await take(`o-${randomUUID()}`, 2, "skip");
    expect(first).toMatchObject({ status: "processed", writes: [{ status: "applied" }] });
    const skipped = await take(`o-${randomUUID()}`, 2, "skip");
    expect(skipped).toMatchObject({ status: "processed", writes: [{ status: "refused" }] });
    const aborted = await take(`o-${randomUUID()}`, 2, "abort");
    expect(aborted).toMatchObject({ status: "failed", released: true });
    expect(aborted.status === "failed" && aborted.error).toBeInstanceOf(EffectRefusedError);
    expect(await row(counters, { pk })).toEqual({ pk, stock: 1 });
  });

  it("refuses a commit over DynamoDB's transaction limits before sending it, and releases the claim", async () => {
    const g = guard();
    const effects = (n: number, bytes: number) => async (ctx: Parameters<Parameters<typeof g.run>[1]>[0]) => {
      for (let i = 0; i < n; i++) {
        ctx.atCommit(
          updateEffect({ tableName: counters, key: { pk: `limit-${i}` }, set: { blob: "x".repeat(bytes) } }),
        );
      }
    };
    const id = `many-${randomUUID()}`;
    const tooMany = await g.run({ subject: id, identity: id }, effects(100, 1));
    expect(tooMany).toMatchObject({ status: "failed", released: true });
    expect(tooMany.status === "failed" && tooMany.error).toBeInstanceOf(TransactionLimitError);
    expect(String(tooMany.status === "failed" && tooMany.error)).toMatch(/at most 100 actions/);
    const big = `big-${randomUUID()}`;
    const tooBig = await g.run({ subject: big, identity: big }, effects(11, 390 * 1024));
    expect(tooBig.status === "failed" && tooBig.error).toBeInstanceOf(TransactionLimitError);
    const fits = `fits-${randomUUID()}`;
    expect((await g.run({ subject: fits, identity: fits }, effects(99, 1))).status).toBe("processed");
  });

  it("rejects an update with nothing to do or a reserved placeholder", () => {
    expect(() => updateEffect({ tableName: counters, key: { pk: "x" } })).toThrow(OptionsError);
    expect(() =>
      updateEffect({
        tableName: counters,
        key: { pk: "x" },
        add: { n: 1 },
        condition: { expression: "#eo_a0 > :z", names: { "#eo_a0": "n" }, values: { ":z": 0 } },
      }),
    ).toThrow(/reserved prefix/);
  });
});
