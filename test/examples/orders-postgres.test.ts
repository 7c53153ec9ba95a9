import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChargesTable, postgresOrdersHandler } from "../../examples/orders/postgres.js";
import { migrate, type PostgresPool } from "../../src/engines/postgres/index.js";
import { lambdaContext, sqsEvent, sqsRecord } from "../kit/index.js";
import { type TestDatabase, testDatabase } from "../kit/postgres.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase("orders");
  await migrate(db.pool, { schema: db.schema });
  await createChargesTable(db.pool, db.schema);
});
afterAll(async () => db?.close());

/**
 * A process that dies at COMMIT: the statements before it ran in the open transaction, COMMIT is never sent, and
 * nothing the process tries afterwards reaches the server (so it cannot release its claim either).
 */
function dyingAtCommit(pool: pg.Pool, ran: string[]): PostgresPool {
  let dead = false;
  const check = () => {
    if (dead) throw new Error("process crashed (injected)");
  };
  return {
    query: (async (sql: string, params?: unknown[]) => {
      check();
      return pool.query(sql, params);
    }) as PostgresPool["query"],
    connect: async () => {
      check();
      const client = await pool.connect();
      return {
        query: (async (sql: string, params?: unknown[]) => {
          check();
          if (sql === "COMMIT") dead = true;
          check();
          ran.push(sql);
          return client.query(sql, params);
        }) as pg.PoolClient["query"],
        // The connection closes with the process: the server rolls the open transaction back.
        release: () => client.release(true),
      };
    },
  };
}

const order = () => ({ orderId: `o-${randomUUID()}`, customerId: "c-1", amountCents: 1250 });
const charges = async (orderId: string) =>
  (await db.pool.query(`SELECT * FROM "${db.schema}".charges WHERE order_id = $1`, [orderId])).rows;

describe("orders on PostgreSQL: the charge and the commit in one transaction", () => {
  it("a duplicate delivery charges once", async () => {
    const handler = postgresOrdersHandler({ pool: db.pool, schema: db.schema });
    const o = order();
    const message = sqsRecord(JSON.stringify(o));
    expect(await handler(sqsEvent(message), lambdaContext())).toEqual({ batchItemFailures: [] });
    // The same message again (a visibility timeout ran out), and a second copy (SQS at-least-once).
    expect(await handler(sqsEvent(message), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler(sqsEvent(sqsRecord(JSON.stringify(o))), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(await charges(o.orderId)).toHaveLength(1);
  });

  it("a crash after the charge statement but before COMMIT leaves no charge; the redelivery charges once", async () => {
    const o = order();
    const message = sqsRecord(JSON.stringify(o));
    const options = { leaseMs: 300 };
    const ran: string[] = [];
    const crashing = postgresOrdersHandler({ pool: dyingAtCommit(db.pool, ran), schema: db.schema, options });
    const crashed = await crashing(sqsEvent(message), lambdaContext());
    expect(crashed.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
    // The charge statement did run, in the transaction that never committed.
    expect(ran.filter((sql) => sql.includes(".charges"))).toHaveLength(1);
    expect(await charges(o.orderId)).toEqual([]);
    // The claim is still held (the process could not release it): the redelivery takes over after the lease.
    await new Promise((r) => setTimeout(r, 400));
    const restarted = postgresOrdersHandler({ pool: db.pool, schema: db.schema, options });
    expect(await restarted(sqsEvent(message), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await charges(o.orderId)).toHaveLength(1);
    expect(await restarted(sqsEvent(message), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await charges(o.orderId)).toHaveLength(1);
  });
});
