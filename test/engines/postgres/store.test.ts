import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError } from "../../../src/core/errors.js";
import { type ApplyContext, createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  deleteExpired,
  isRetryablePostgresError,
  migrate,
  PostgresFencedSink,
  PostgresStore,
  postgresWrite,
} from "../../../src/engines/postgres/index.js";
import { guardEvent as ev, millisecondApartClock } from "../../kit/index.js";
import { countingPool, createSinkTable, type TestDatabase, testDatabase } from "../../kit/postgres.js";

const p = positionFromNumber;
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  await migrate(db.pool, { schema: db.schema });
  await createSinkTable(db.pool, db.schema, "sink");
});
afterAll(async () => db?.close());

const subject = () => `bucket/${randomUUID()}`;

describe("postgres store: statements per outcome (counted at the pool)", () => {
  const setup = () => {
    const counting = countingPool(db.pool);
    const store = new PostgresStore({ pool: counting.pool, schema: db.schema });
    const sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
    return { ...counting, guard: createGuard({ store, clock: millisecondApartClock() }), sink };
  };

  it("run: new = claim + one commit transaction; without effects 2 statements; duplicate 1; stale 1", async () => {
    const { guard, sink, count, reset } = setup();
    const s = subject();
    const row = `row-${randomUUID()}`;
    reset();
    await guard.run(ev(s, 2), async (ctx) => {
      ctx.atCommit(sink.atomicUpsert(ctx, { pk: row, value: "v2" }));
    });
    expect(count).toEqual({ statements: 1, transactions: 1, inTransactions: 2 });
    expect(await sink.get(row)).toMatchObject({ value: "v2", src_pos: p(2) });
    reset();
    await guard.run(ev(s, 3), async () => {});
    expect(count).toEqual({ statements: 2, transactions: 0, inTransactions: 0 });
    reset();
    expect((await guard.run(ev(s, 3), async () => {})).status).toBe("duplicate");
    expect(count.statements).toBe(1);
    reset();
    expect((await guard.run(ev(s, 1), async () => {})).status).toBe("stale");
    expect(count.statements).toBe(1);
  });

  it("run: failed = claim + release, 2 statements", async () => {
    const { guard, count, reset } = setup();
    reset();
    await guard.run(ev(subject(), 4), async () => {
      throw new Error("x");
    });
    expect(count).toEqual({ statements: 2, transactions: 0, inTransactions: 0 });
  });

  it("apply: new with an effect = 1 transaction; duplicate and stale = 1 statement (in a transaction with effects)", async () => {
    const { guard, sink, count, reset } = setup();
    const s = subject();
    const row = `row-${randomUUID()}`;
    const compute = (ctx: ApplyContext) => {
      ctx.atCommit(sink.atomicUpsert(ctx, { pk: row, value: "v" }));
    };
    reset();
    expect((await guard.apply(ev(s, 5), compute)).status).toBe("processed");
    expect(count).toEqual({ statements: 0, transactions: 1, inTransactions: 2 });
    // Refused with an effect: the one deciding statement, in a transaction rolled back at once (BEGIN, ROLLBACK).
    const refusedInTransaction = { statements: 0, transactions: 1, inTransactions: 1 };
    reset();
    expect((await guard.apply(ev(s, 5), compute)).status).toBe("duplicate");
    expect(count).toEqual(refusedInTransaction);
    reset();
    expect((await guard.apply(ev(s, 3), compute)).status).toBe("stale");
    expect(count).toEqual(refusedInTransaction);
    const alone = { statements: 1, transactions: 0, inTransactions: 0 };
    reset();
    expect((await guard.apply(ev(s, 6), () => "no effect")).status).toBe("processed");
    expect(count).toEqual(alone);
    reset();
    expect((await guard.apply(ev(s, 6), () => "no effect")).status).toBe("duplicate");
    expect(count).toEqual(alone);
  });
});

describe("postgres store: errors", () => {
  it("an effect the server refuses for good (a constraint) rolls the commit back and is not retryable", async () => {
    const store = new PostgresStore({ pool: db.pool, schema: db.schema });
    const guard = createGuard({ store });
    const s = subject();
    const out = await guard.run(ev(s, 1), async (ctx) => {
      ctx.atCommit(postgresWrite(`INSERT INTO "${db.schema}".sink (pk) VALUES (NULL)`, [], "null key"));
    });
    expect(out).toMatchObject({ status: "failed", released: true });
    const error = out.status === "failed" ? (out.error as StoreError) : undefined;
    expect(error).toBeInstanceOf(StoreError);
    expect(error?.retryable).toBe(false);
    expect(error?.message).toMatch(/23502/);
    // Rolled back with the effect: the claim was released, nothing committed.
    const states = await db.pool.query(
      `SELECT status FROM "${db.schema}".eonce_state WHERE state_key LIKE $1`,
      [`%${s}%`],
    );
    expect(states.rows).toEqual([{ status: "released" }]);
  });

  it("a missing table is not retryable; an unreachable server is", async () => {
    const missing = new PostgresStore({ pool: db.pool, schema: db.schema, table: "nope" });
    await expect(missing.read("k")).rejects.toMatchObject({ retryable: false });
    const nowhere = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:1/test" });
    try {
      const down = new PostgresStore({ pool: nowhere, schema: db.schema });
      await expect(down.read("k")).rejects.toMatchObject({ name: "StoreError", retryable: true });
    } finally {
      await nowhere.end();
    }
  });

  it("a deadlock the server detects is retryable", async () => {
    const a = await db.pool.connect();
    const b = await db.pool.connect();
    try {
      await db.pool.query(`INSERT INTO "${db.schema}".sink (pk) VALUES ('d1'), ('d2')`);
      await a.query("BEGIN");
      await b.query("BEGIN");
      await a.query(`UPDATE "${db.schema}".sink SET value = 'a' WHERE pk = 'd1'`);
      await b.query(`UPDATE "${db.schema}".sink SET value = 'b' WHERE pk = 'd2'`);
      const crossed = await Promise.allSettled([
        a.query(`UPDATE "${db.schema}".sink SET value = 'a' WHERE pk = 'd2'`),
        b.query(`UPDATE "${db.schema}".sink SET value = 'b' WHERE pk = 'd1'`),
      ]);
      const deadlock = crossed.find((r) => r.status === "rejected")?.reason;
      expect(deadlock).toMatchObject({ code: "40P01" });
      expect(isRetryablePostgresError(deadlock)).toBe(true);
    } finally {
      await a.query("ROLLBACK");
      await b.query("ROLLBACK");
      a.release();
      b.release();
    }
  });

  it("statement timeouts are retryable; syntax errors are not", async () => {
    const timeout = await db.pool.query("SET statement_timeout = 1; SELECT pg_sleep(1)").catch((e) => e);
    expect(timeout).toMatchObject({ code: "57014" });
    expect(isRetryablePostgresError(timeout)).toBe(true);
    const syntax = await db.pool.query("SELEC 1").catch((e) => e);
    expect(syntax).toMatchObject({ code: "42601" });
    expect(isRetryablePostgresError(syntax)).toBe(false);
  });

  it("options: a missing pool or table, or a name that is no plain identifier, is an OptionsError", () => {
    expect(() => new PostgresStore({} as never)).toThrow(OptionsError);
    expect(() => new PostgresStore({ pool: db.pool, table: 'x"; DROP TABLE y' })).toThrow(OptionsError);
    expect(() => new PostgresFencedSink({ pool: db.pool } as never)).toThrow(/table/);
    expect(() => new PostgresStore({ pool: db.pool, maxResultBytes: 0 })).toThrow(/maxResultBytes/);
  });
});

describe("postgres schema and sink", () => {
  it("migrate is idempotent; deleteExpired removes only rows past their expiry", async () => {
    await migrate(db.pool, { schema: db.schema, table: "ttl" });
    await migrate(db.pool, { schema: db.schema, table: "ttl" });
    const store = new PostgresStore({ pool: db.pool, schema: db.schema, table: "ttl" });
    const g = createGuard({ store });
    await g.run(ev("a", 1), async () => {});
    await db.pool.query(`UPDATE "${db.schema}".ttl SET expires_at = 5`);
    await g.run(ev("b", 1), async () => {});
    expect(await deleteExpired(db.pool, { schema: db.schema, table: "ttl", nowSeconds: 10 })).toBe(1);
    const left = await db.pool.query(`SELECT count(*)::int AS n FROM "${db.schema}".ttl`);
    expect(left.rows[0]).toEqual({ n: 1 });
  });

  it("the fenced sink's put lands newer work only; a row without a position counts as older", async () => {
    const sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
    const pk = `r-${randomUUID()}`;
    await db.pool.query(`INSERT INTO "${db.schema}".sink (pk, value) VALUES ($1, 'backfill')`, [pk]);
    expect(await sink.put({ position: p(5), fence: 10 }, { pk, value: "five" })).toBe("applied");
    expect(await sink.put({ position: p(4), fence: 99 }, { pk, value: "four" })).toBe("stale");
    expect(await sink.put({ position: p(5), fence: 9 }, { pk, value: "older claim" })).toBe("stale");
    expect(await sink.put({ position: p(5), fence: 11 }, { pk, value: "newer claim" })).toBe("applied");
    expect(await sink.get(pk)).toMatchObject({ value: "newer claim", src_pos: p(5), src_fence: "11" });
    expect(() => sink.upsert({ position: p(1), fence: 0 }, { pk })).toThrow(OptionsError);
    expect(() => sink.upsert({ position: p(1), fence: 1 }, { value: "no key" })).toThrow(/pk/);
  });
});
