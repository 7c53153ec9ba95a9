import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import {
  InlinePostgresStore,
  MigrationLockTimeoutError,
  migrate,
  migrateInline,
  PostgresStore,
} from "../../../src/engines/postgres/index.js";
import type { PostgresPool } from "../../../src/engines/postgres/pool.js";
import { guardEvent as ev, sleep } from "../../kit/index.js";
import { countingPool, POSTGRES_URL, type TestDatabase, testDatabase } from "../../kit/postgres.js";

/*
 * The migrations under concurrent cold starts and beside live traffic: six pools (six cold starts) at once on a fresh
 * schema or table; a no-op migration behind a long transaction takes no lock, so neither it nor the guard waits; a
 * migration with work behind one gives up after lockTimeoutMs with a typed error instead of queueing traffic.
 */
const COLD_STARTS = 6;
const ROUNDS = 4;
/** How long the long transaction holds its lock; "in milliseconds" is asserted as under QUICK_MS (a loaded machine). */
const HOLD_MS = 4000;
const QUICK_MS = 1000;

let db: TestDatabase;
let pools: pg.Pool[];
/** Schemas made here besides db.schema, dropped after. */
const schemas: string[] = [];

beforeAll(async () => {
  db = await testDatabase("eonce_mig");
  await migrate(db.pool, { schema: db.schema });
  pools = Array.from({ length: COLD_STARTS }, () => new pg.Pool({ connectionString: POSTGRES_URL, max: 2 }));
});
afterAll(async () => {
  for (const s of schemas) await db?.pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await Promise.all((pools ?? []).map((p) => p.end()));
  await db?.close();
});

const subject = () => `bucket/${randomUUID()}`;
const freshSchema = () => {
  const s = `${db.schema}_${schemas.length}`;
  schemas.push(s);
  return s;
};
/** Each pool has a connection open, so that the cold starts race on their statements, not on connecting. */
const warm = () => Promise.all(pools.map((p) => p.query("SELECT 1")));

/** The reason of every rejected promise, as text. */
function failures(results: PromiseSettledResult<unknown>[]): string[] {
  return results.flatMap((r) => (r.status === "rejected" ? [String(r.reason?.message ?? r.reason)] : []));
}

interface Timed {
  ms: number;
  error?: unknown;
}
async function timed(work: () => Promise<unknown>): Promise<Timed> {
  const started = Date.now();
  try {
    await work();
    return { ms: Date.now() - started };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}

/**
 * A second session runs `sql` in a transaction and keeps it open for HOLD_MS (a long reader, pg_dump, a session idle
 * in transaction), holding the locks `sql` took; `end` ends it early.
 */
async function longTransaction(sql: string): Promise<{ end(): Promise<void> }> {
  const client = await db.pool.connect();
  await client.query("BEGIN");
  await client.query(sql);
  let ended: Promise<void> | undefined;
  const end = () => {
    ended ??= client.query("ROLLBACK").then(
      () => client.release(),
      (e: Error) => client.release(e),
    );
    return ended;
  };
  const timer = setTimeout(end, HOLD_MS);
  return {
    end: () => {
      clearTimeout(timer);
      return end();
    },
  };
}

const columnsOf = async (schema: string, table: string): Promise<string[]> =>
  (
    await db.pool.query(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
      [schema, table],
    )
  ).rows.map((r: { column_name: string }) => r.column_name);

describe("migrate and migrateInline: concurrent cold starts", () => {
  it(`${COLD_STARTS} pools migrate a fresh schema at once, ${ROUNDS} rounds: none throws; the table works`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const schema = freshSchema();
      await warm();
      const results = await Promise.allSettled(pools.map((p) => migrate(p, { schema })));
      expect(failures(results), `round ${round}`).toEqual([]);
      const guard = createGuard({ store: new PostgresStore({ pool: db.pool, schema }) });
      expect((await guard.apply(ev(subject(), 1), () => {})).status).toBe("processed");
    }
  });

  it("two tables in one new schema at once: both created", async () => {
    const schema = freshSchema();
    await warm();
    const results = await Promise.allSettled(
      pools.map((p, i) => migrate(p, { schema, table: i % 2 === 0 ? "eonce_state" : "other_state" })),
    );
    expect(failures(results)).toEqual([]);
    expect(await columnsOf(schema, "other_state")).toContain("committed_fingerprint");
  });

  it(`${COLD_STARTS} pools migrateInline a fresh user table at once, ${ROUNDS} rounds: none throws; the store works`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const table = `rows_${round}`;
      await db.pool.query(`CREATE TABLE "${db.schema}"."${table}" (pk text PRIMARY KEY, thumb text)`);
      await warm();
      const results = await Promise.allSettled(
        pools.map((p) => migrateInline(p, { schema: db.schema, table })),
      );
      expect(failures(results), `round ${round}`).toEqual([]);
      const store = new InlinePostgresStore({ pool: db.pool, schema: db.schema, table });
      const out = await createGuard({ store }).apply(ev(subject(), 1), (ctx) => {
        ctx.atCommit(store.row(ctx, { thumb: "t" }));
      });
      expect(out.status).toBe("processed");
    }
  });
});

describe("migrate and migrateInline beside live traffic", () => {
  it("nothing missing: migrate runs one catalog query and takes no lock; a long reader stalls neither it nor the guard", async () => {
    const counting = countingPool(db.pool);
    const guard = createGuard({ store: new PostgresStore({ pool: db.pool, schema: db.schema }) });
    const reader = await longTransaction(`SELECT count(*) FROM "${db.schema}".eonce_state`);
    try {
      const migrating = timed(() => migrate(counting.pool, { schema: db.schema }));
      await sleep(200); // a migration that queues for a lock has queued by now
      const s = subject();
      const traffic = timed(async () => {
        await guard.apply(ev(s, 1), () => {});
        await guard.run(ev(s, 2), async () => {});
      });
      const [m, g] = await Promise.all([migrating, traffic]);
      expect(m.error).toBeUndefined();
      expect.soft(m.ms, "migrate's ms").toBeLessThan(QUICK_MS);
      expect.soft(g.ms, "the guard's ms").toBeLessThan(QUICK_MS);
      expect(counting.count).toEqual({ statements: 1, transactions: 0, inTransactions: 0 });
    } finally {
      await reader.end();
    }
  });

  it("nothing missing: migrateInline runs catalog queries only; a long reader stalls neither it nor the guard", async () => {
    const table = "inline_live";
    await db.pool.query(`CREATE TABLE "${db.schema}"."${table}" (pk text PRIMARY KEY, thumb text)`);
    await migrateInline(db.pool, { schema: db.schema, table });
    const counting = countingPool(db.pool);
    const store = new InlinePostgresStore({ pool: db.pool, schema: db.schema, table });
    const guard = createGuard({ store });
    const reader = await longTransaction(`SELECT count(*) FROM "${db.schema}"."${table}"`);
    try {
      const migrating = timed(() => migrateInline(counting.pool, { schema: db.schema, table }));
      await sleep(200);
      const s = subject();
      const traffic = timed(async () => {
        await guard.apply(ev(s, 1), (ctx) => ctx.atCommit(store.row(ctx, { thumb: "a" })));
        await guard.run(ev(s, 2), async () => {});
      });
      const [m, g] = await Promise.all([migrating, traffic]);
      expect(m.error).toBeUndefined();
      expect.soft(m.ms, "migrateInline's ms").toBeLessThan(QUICK_MS);
      expect.soft(g.ms, "the guard's ms").toBeLessThan(QUICK_MS);
      expect(counting.count).toEqual({ statements: 2, transactions: 0, inTransactions: 0 });
    } finally {
      await reader.end();
    }
  });

  it("work to do behind a long transaction: migrate fails after lockTimeoutMs (typed); the guard waits at most that long", async () => {
    const schema = freshSchema();
    await migrate(db.pool, { schema });
    await db.pool.query(`DROP INDEX "${schema}".eonce_state_expires_at`);
    const guard = createGuard({ store: new PostgresStore({ pool: db.pool, schema }) });
    // A session idle in a transaction that wrote: CREATE INDEX's SHARE lock waits for it.
    const writer = await longTransaction(
      `UPDATE "${schema}".eonce_state SET attempts = 0 WHERE state_key = ''`,
    );
    try {
      const migrating = timed(() => migrate(db.pool, { schema, lockTimeoutMs: 500 }));
      await sleep(150);
      const traffic = timed(() => guard.apply(ev(subject(), 1), () => {}));
      const [m, g] = await Promise.all([migrating, traffic]);
      expect(m.error).toBeInstanceOf(MigrationLockTimeoutError);
      const error = m.error as MigrationLockTimeoutError;
      expect(error).toMatchObject({
        table: `"${schema}"."eonce_state"`,
        waitedFor: "table",
        retryable: true,
      });
      expect(error.message).toMatch(/index on expires_at.*could not lock it within lockTimeoutMs \(500 ms\)/);
      expect(error.cause).toMatchObject({ code: "55P03" });
      expect.soft(m.ms, "migrate's ms").toBeGreaterThanOrEqual(450);
      expect.soft(m.ms, "migrate's ms").toBeLessThan(500 + QUICK_MS);
      expect.soft(g.ms, "the guard's ms").toBeLessThan(500 + QUICK_MS);
    } finally {
      await writer.end();
    }
    await migrate(db.pool, { schema });
    const index = await db.pool.query("SELECT to_regclass($1) AS oid", [
      `"${schema}".eonce_state_expires_at`,
    ]);
    expect(index.rows[0].oid).not.toBeNull();
  });

  it("work to do behind a long reader: migrateInline fails after lockTimeoutMs (typed); the table's readers wait at most that long", async () => {
    const table = "inline_upgrade";
    await db.pool.query(`CREATE TABLE "${db.schema}"."${table}" (pk text PRIMARY KEY, thumb text)`);
    await migrateInline(db.pool, { schema: db.schema, table });
    await db.pool.query(`ALTER TABLE "${db.schema}"."${table}" DROP COLUMN eo_att`);
    const reader = await longTransaction(`SELECT count(*) FROM "${db.schema}"."${table}"`);
    try {
      const migrating = timed(() => migrateInline(db.pool, { schema: db.schema, table, lockTimeoutMs: 500 }));
      await sleep(150);
      const traffic = timed(() => db.pool.query(`SELECT * FROM "${db.schema}"."${table}" WHERE pk = 'x'`));
      const [m, g] = await Promise.all([migrating, traffic]);
      expect(m.error).toBeInstanceOf(MigrationLockTimeoutError);
      expect((m.error as Error).message).toMatch(/lacks column eo_att, but the migration could not lock it/);
      expect.soft(m.ms, "migrateInline's ms").toBeLessThan(500 + QUICK_MS);
      expect.soft(g.ms, "the reader's ms").toBeLessThan(500 + QUICK_MS);
    } finally {
      await reader.end();
    }
    await migrateInline(db.pool, { schema: db.schema, table });
    expect(await columnsOf(db.schema, table)).toContain("eo_att");
  });

  it("a migration waiting for the migration lock gives up after its own lockTimeoutMs, saying so", async () => {
    const schema = freshSchema();
    await migrate(db.pool, { schema });
    await db.pool.query(`DROP INDEX "${schema}".eonce_state_expires_at`);
    const writer = await longTransaction(
      `UPDATE "${schema}".eonce_state SET attempts = 0 WHERE state_key = ''`,
    );
    try {
      const first = timed(() => migrate(db.pool, { schema, lockTimeoutMs: 2000 }));
      await sleep(200);
      const second = await timed(() => migrate(pools[0] as PostgresPool, { schema, lockTimeoutMs: 300 }));
      expect(second.error).toMatchObject({ name: "MigrationLockTimeoutError", waitedFor: "migration" });
      expect((await first).error).toMatchObject({ waitedFor: "table" });
    } finally {
      await writer.end();
    }
  });

  it("options are checked before any statement; the store's own options object is accepted", async () => {
    const counting = countingPool(db.pool);
    for (const bad of [{ lockTimeoutMs: 0 }, { lockTimeoutMS: 5 }, { schema: 'x"y' }, { table: "" }])
      await expect(migrate(counting.pool, bad as never)).rejects.toBeInstanceOf(OptionsError);
    await expect(migrateInline(counting.pool, { table: "t", keyColumn: "a b" })).rejects.toBeInstanceOf(
      OptionsError,
    );
    await expect(migrateInline(counting.pool, { tabel: "t" } as never)).rejects.toBeInstanceOf(OptionsError);
    expect(counting.count.statements).toBe(0);
    // As a caller passes one object to the store and to the migration.
    const storeOptions = { pool: db.pool, schema: db.schema, maxResultBytes: 1000, preparedStatements: true };
    await migrate(db.pool, storeOptions);
    await db.pool.query(`CREATE TABLE "${db.schema}".inline_opts (pk text PRIMARY KEY)`);
    const inlineOptions = { ...storeOptions, table: "inline_opts", rowKey: (k: string) => k };
    await migrateInline(db.pool, inlineOptions);
    expect(await columnsOf(db.schema, "inline_opts")).toContain("eo_fence");
  });
});
