import { migrate } from "../../src/stores/postgres/schema.js";
import { PostgresFencedSink } from "../../src/stores/postgres/sink.js";
import { PostgresStore } from "../../src/stores/postgres/store.js";
import { createSinkTable, losingPool, testDatabase } from "./postgres.js";
import type { StoreUnderTest } from "./stores.js";

/** The postgres engine of the store and guard suites: its own schema, a state table and a fenced sink table. */
export async function postgresStoreUnderTest(): Promise<StoreUnderTest> {
  const db = await testDatabase();
  await migrate(db.pool, { schema: db.schema, table: "state" });
  await createSinkTable(db.pool, db.schema, "sink");
  const lost = losingPool(db.pool);
  const store = new PostgresStore({ pool: lost.pool, schema: db.schema, table: "state" });
  const sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
  return {
    name: "postgres",
    store,
    sink: {
      atomic: (ctx, key, value) => sink.atomicUpsert(ctx, { pk: key, value }),
      put: (ctx, key, value) => sink.put(ctx, { pk: key, value }),
      rowFor: (stateKey) => `row-${stateKey}`,
      read: async (key) => {
        const row = await sink.get(key);
        return row
          ? { value: String(row.value), srcPos: String(row.src_pos), srcFence: Number(row.src_fence) }
          : undefined;
      },
    },
    forget: async (key) => {
      await db.pool.query(`DELETE FROM "${db.schema}".state WHERE state_key = $1`, [key]);
    },
    loseResponses: (count) => lost.lose(count),
    rawItem: async (key) => {
      const out = await db.pool.query(
        `SELECT row_to_json(s)::jsonb AS j, octet_length(row_to_json(s)::text) AS bytes FROM "${db.schema}".state s WHERE state_key = $1`,
        [key],
      );
      const row = out.rows[0];
      if (!row) return undefined;
      const columns = Object.entries(row.j as Record<string, unknown>).filter(([, v]) => v !== null);
      return { attributes: columns.map(([k]) => k).sort(), bytes: Number(row.bytes) };
    },
    close: () => db.close(),
  };
}
