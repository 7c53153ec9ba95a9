import pg from "pg";
import { migrateInline } from "../../src/engines/postgres/inline-schema.js";
import { InlinePostgresStore } from "../../src/engines/postgres/inline-store.js";
import { PostgresOutbox, type PostgresOutboxOptions } from "../../src/engines/postgres/outbox.js";
import { migrate } from "../../src/engines/postgres/schema.js";
import { PostgresFencedSink } from "../../src/engines/postgres/sink.js";
import { PostgresStore } from "../../src/engines/postgres/store.js";
import { inlineRows } from "./inline-rows.js";
import { createSinkTable, losingPool, POSTGRES_URL, type TestDatabase, testDatabase } from "./postgres.js";
import type { StoreUnderTest } from "./stores.js";

/**
 * The engine's outbox (its entries fold into the store's commits), and readers on pools of their own (relays in
 * other processes), ended with the suite.
 */
function outboxUnderTest(
  db: TestDatabase,
  options: Omit<PostgresOutboxOptions, "pool" | "schema">,
): { outbox: NonNullable<StoreUnderTest["outbox"]>; close(): Promise<void> } {
  const pools: pg.Pool[] = [];
  return {
    outbox: {
      outbox: new PostgresOutbox({ pool: db.pool, schema: db.schema, ...options }),
      reader: async () => {
        const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
        pools.push(pool);
        return new PostgresOutbox({ pool, schema: db.schema, ...options });
      },
    },
    close: async () => {
      await Promise.all(pools.map((p) => p.end()));
    },
  };
}

/** The postgres engine of the store and guard suites: its own schema, a state table and a fenced sink table. */
export async function postgresStoreUnderTest(): Promise<StoreUnderTest> {
  const db = await testDatabase();
  await migrate(db.pool, { schema: db.schema, table: "state", outbox: true });
  const outbox = outboxUnderTest(db, { stateTable: "state" });
  await createSinkTable(db.pool, db.schema, "sink");
  const lost = losingPool(db.pool);
  const store = new PostgresStore({ pool: lost.pool, schema: db.schema, table: "state" });
  const sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
  return {
    name: "postgres",
    store,
    outbox: outbox.outbox,
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
    close: async () => {
      await outbox.close();
      await db.close();
    },
  };
}

/**
 * The postgres-inline engine: inline state in the `eo_*` columns of a user table (`rows`), whose own columns are
 * the test sink's (`value`, `src_pos`, `src_fence`). As for inline DynamoDB (stores.ts), a test's sink row is the
 * state key's own row.
 */
export async function postgresInlineStoreUnderTest(): Promise<StoreUnderTest> {
  const db = await testDatabase();
  await createSinkTable(db.pool, db.schema, "rows");
  await migrateInline(db.pool, { schema: db.schema, table: "rows", outbox: true });
  const outbox = outboxUnderTest(db, { engine: "postgres-inline", stateTable: "rows" });
  const lost = losingPool(db.pool);
  // The store's defaults: each step one call of the functions migrateInline installed (test/engines/postgres/
  // functions.test.ts compares them with the statements, which the state table's engine sends here).
  const store = new InlinePostgresStore({ pool: lost.pool, schema: db.schema, table: "rows" });
  const { rowFor, stateKeyOf } = inlineRows((k) => store.rowKeyOf(k));
  const columns = (ctx: { position: string | undefined; fence: number }, value: string) => ({
    value,
    src_pos: ctx.position ?? "",
    src_fence: ctx.fence,
  });
  const rowOf = async (row: string) =>
    (await db.pool.query(`SELECT * FROM "${db.schema}".rows WHERE pk = $1`, [row])).rows[0];
  return {
    name: "postgres-inline",
    store,
    outbox: outbox.outbox,
    sink: {
      rowPerStateKey: true,
      rowFor,
      atomic: (ctx, row, value) => store.row({ stateKey: stateKeyOf(row) }, columns(ctx, value)),
      put: (ctx, row, value) =>
        store.putRow({ stateKey: stateKeyOf(row), fence: ctx.fence }, columns(ctx, value)),
      read: async (row) => {
        const r = await rowOf(row);
        // The row also holds the state: no value means no row write landed.
        if (r?.value == null) return undefined;
        return { value: String(r.value), srcPos: String(r.src_pos), srcFence: Number(r.src_fence) };
      },
    },
    forget: async (key) => {
      await db.pool.query(`DELETE FROM "${db.schema}".rows WHERE pk = $1`, [store.rowKeyOf(key)]);
    },
    loseResponses: (count) => lost.lose(count),
    rawItem: async (key) => {
      const r = await rowOf(store.rowKeyOf(key));
      if (!r) return undefined;
      const state = Object.entries(r as Record<string, unknown>).filter(
        ([k, v]) => k.startsWith("eo_") && v !== null,
      );
      return {
        attributes: state.map(([k]) => k).sort(),
        bytes: Buffer.byteLength(JSON.stringify(Object.fromEntries(state))),
      };
    },
    close: async () => {
      await outbox.close();
      await db.close();
    },
  };
}
