import { randomUUID } from "node:crypto";
import type { SimOutbox } from "../../sim/backend.js";
import { PostgresOutbox } from "./outbox.js";
import { migrateOutboxTable } from "./schema.js";
import type { PostgresChaosEnv } from "./sim-env.js";

/**
 * An outbox history's outbox: a table of its own in the run's schema (histories run at once, and a relay claims the
 * head of every subject in its table, so one table shared would relay other histories' entries), dropped with it.
 */
export async function historyOutbox(
  env: PostgresChaosEnv,
  engine: "postgres" | "postgres-inline",
  stateTable: string,
): Promise<SimOutbox> {
  const { pool, schema } = env;
  const table = `outbox_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  // Beside other histories' cold starts (their migrations of the schema take turns): a long wait, not a failure.
  await migrateOutboxTable(pool, { what: "chaos outbox", schema, table, lockTimeoutMs: 60_000 });
  const outbox = new PostgresOutbox({ pool, schema, engine, stateTable, table });
  return { outbox, reader: async () => outbox };
}
