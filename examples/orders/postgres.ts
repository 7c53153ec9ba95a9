import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { type PostgresPool, PostgresStore, postgresWrite } from "../../src/engines/postgres/index.js";
import type { LambdaHandler } from "../../src/lambda/handlers.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import type { EffectivelyOnceOptions } from "../../src/lambda/options.js";
import { parseOrder } from "./order.js";

/**
 * Orders on PostgreSQL: SQS → Lambda → one charge row per order, in the same database as the guard's state. The
 * charge INSERT runs in the commit's transaction (BEGIN; state update; INSERT charge; COMMIT): a duplicate delivery
 * is refused before the handler runs, and a run that dies before COMMIT leaves neither the charge nor the commit,
 * so the redelivery charges once.
 */
export interface PostgresOrdersConfig {
  pool: PostgresPool;
  /** Where the state table (`migrate`) and the charges table (`createChargesTable`) live. */
  schema: string;
  options?: Omit<EffectivelyOnceOptions, "store">;
}

export async function createChargesTable(pool: PostgresPool, schema: string): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".charges (
    order_id text PRIMARY KEY,
    customer_id text NOT NULL,
    amount_cents integer NOT NULL,
    charged_at timestamptz NOT NULL DEFAULT now()
  )`);
}

export function postgresOrdersHandler(
  config: PostgresOrdersConfig,
): LambdaHandler<SQSEvent, SQSBatchResponse> {
  const store = new PostgresStore({ pool: config.pool, schema: config.schema });
  return sqsHandler(
    async (event, ctx) => {
      if (event.kind !== "message") return undefined;
      const order = parseOrder(event.body);
      // The payment provider call would go here; its charge is recorded with the commit, or not at all.
      ctx.atCommit(
        postgresWrite(
          `INSERT INTO "${config.schema}".charges (order_id, customer_id, amount_cents) VALUES ($1, $2, $3)`,
          [order.orderId, order.customerId, order.amountCents],
          `charge ${order.orderId}`,
        ),
      );
      return { charged: order.amountCents };
    },
    {
      ...config.options,
      store,
      messages: "accept",
      subject: (m) => parseOrder(m.body).orderId,
      identity: (m) => parseOrder(m.body).orderId,
      visibilityHeartbeat: false,
    },
  );
}
