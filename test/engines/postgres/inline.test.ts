import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError, UnsupportedAtomicWriteError } from "../../../src/core/errors.js";
import { type ApplyContext, createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import type { ClaimRequest } from "../../../src/core/state.js";
import { inlineRowKey, stateKey, stateKeyOfInlineRow } from "../../../src/core/state-key.js";
import {
  INLINE_POSTGRES_COLUMNS,
  InlinePostgresStore,
  migrateInline,
  postgresWrite,
} from "../../../src/engines/postgres/index.js";
import { stateKeyOfInlineRowSql } from "../../../src/engines/postgres/inline-admin.js";
import { adversarialText } from "../../kit/adversarial.js";
import { guardEvent as ev, millisecondApartClock } from "../../kit/index.js";
import { countingPool, type TestDatabase, testDatabase } from "../../kit/postgres.js";

/*
 * What is particular to inline state on PostgreSQL (the contract and guard suites run on it through
 * test/kit/stores.ts, the fault simulator in test/sim/postgres.test.ts): one statement per event and no
 * transaction, the user's columns left alone and typed by the table, the row writes fenced, options checked eagerly.
 */
const p = positionFromNumber;
let db: TestDatabase;
const table = (name: string) => `"${db.schema}"."${name}"`;

beforeAll(async () => {
  db = await testDatabase("eonce_inline");
  await db.pool.query(
    `CREATE TABLE ${table("thumbs")} (pk text PRIMARY KEY, thumb text, owner text, made int NOT NULL DEFAULT 0)`,
  );
  await migrateInline(db.pool, { schema: db.schema, table: "thumbs" });
});
afterAll(async () => db?.close());

const subject = () => `bucket/${randomUUID()}`;
const rowOf = async (name: string, key: unknown, column = "pk") =>
  (await db.pool.query(`SELECT * FROM ${table(name)} WHERE ${column} = $1`, [key])).rows[0];

describe("InlinePostgresStore: statements per outcome (counted at the pool)", () => {
  const setup = () => {
    const counting = countingPool(db.pool);
    const store = new InlinePostgresStore({ pool: counting.pool, schema: db.schema, table: "thumbs" });
    return { ...counting, store, guard: createGuard({ store, clock: millisecondApartClock() }) };
  };

  it("apply: a new event with its row is 1 statement and no transaction; duplicate 1; stale 1", async () => {
    const { guard, store, count, reset } = setup();
    const s = subject();
    const compute = (n: number) => (ctx: ApplyContext) => {
      ctx.atCommit(store.row(ctx, { thumb: `t${n}` }));
      return n;
    };
    const one = { statements: 1, transactions: 0, inTransactions: 0 };
    reset();
    expect(await guard.apply(ev(s, 2), compute(2))).toMatchObject({
      status: "processed",
      writes: [{ status: "applied" }],
    });
    expect(count).toEqual(one);
    for (const [n, status] of [
      [2, "duplicate"],
      [1, "stale"],
    ] as const) {
      reset();
      expect((await guard.apply(ev(s, n), compute(n))).status).toBe(status);
      expect(count).toEqual(one);
    }
    expect(await rowOf("thumbs", s)).toMatchObject({ thumb: "t2", eo_st: "done", eo_cpos: p(2) });
  });

  it("prepared statements: the same statements and outcomes, each prepared once per connection", async () => {
    const counting = countingPool(db.pool);
    const st = new InlinePostgresStore({
      pool: counting.pool,
      schema: db.schema,
      table: "thumbs",
      preparedStatements: true,
    });
    const g = createGuard({ store: st, clock: millisecondApartClock() });
    const s = subject();
    const thumb = (ctx: ApplyContext) => ctx.atCommit(st.row(ctx, { thumb: "p" }));
    const outcomes = [];
    for (const n of [2, 2, 1, 3]) outcomes.push((await g.apply(ev(s, n), thumb)).status);
    expect(outcomes).toEqual(["processed", "duplicate", "stale", "processed"]);
    expect(counting.count).toEqual({ statements: 4, transactions: 0, inTransactions: 0 });
    // On one connection: two applies of the same shape leave one prepared statement.
    const client = await db.pool.connect();
    try {
      const named = new InlinePostgresStore({
        pool: { query: client.query.bind(client), connect: async () => client } as never,
        schema: db.schema,
        table: "thumbs",
        preparedStatements: true,
      });
      await createGuard({ store: named }).apply(ev(s, 4), (ctx) =>
        ctx.atCommit(named.row(ctx, { thumb: "q" })),
      );
      await createGuard({ store: named }).apply(ev(s, 5), (ctx) =>
        ctx.atCommit(named.row(ctx, { thumb: "r" })),
      );
      const prepared = await client.query(
        "SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'eonce_%'",
      );
      expect(prepared.rows[0].n).toBe(1);
    } finally {
      client.release();
    }
    expect(await rowOf("thumbs", s)).toMatchObject({ thumb: "r", eo_cpos: p(5) });
  });

  it("run: claim, then commit with the row, 2 statements; failed = claim + release", async () => {
    const { guard, store, count, reset } = setup();
    const s = subject();
    reset();
    const out = await guard.run(ev(s, 3), async (ctx) => {
      ctx.atCommit(store.row(ctx, { thumb: "t3" }));
      return "ok";
    });
    expect(out).toMatchObject({ status: "processed", writes: [{ status: "applied" }] });
    expect(count).toEqual({ statements: 2, transactions: 0, inTransactions: 0 });
    reset();
    const failed = await guard.run(ev(s, 4), async () => {
      throw new Error("boom");
    });
    expect(failed.status).toBe("failed");
    expect(count).toEqual({ statements: 2, transactions: 0, inTransactions: 0 });
    expect(await rowOf("thumbs", s)).toMatchObject({ thumb: "t3", eo_st: "released", eo_cpos: p(3) });
  });
});

describe("InlinePostgresStore", () => {
  const store = () => new InlinePostgresStore({ pool: db.pool, schema: db.schema, table: "thumbs" });

  it("leaves the user's columns alone: a row written by something else is claimed and keeps them", async () => {
    const s = subject();
    await db.pool.query(
      `INSERT INTO ${table("thumbs")} (pk, thumb, owner, made) VALUES ($1, 'old', 'backfill', 7)`,
      [s],
    );
    const st = store();
    const g = createGuard({ store: st });
    // A run that fails: claim and release touch only eo_* columns.
    expect(await g.run(ev(s, 1), async () => Promise.reject(new Error("boom")))).toMatchObject({
      status: "failed",
      released: true,
    });
    expect(await rowOf("thumbs", s)).toMatchObject({
      thumb: "old",
      owner: "backfill",
      made: 7,
      eo_st: "released",
    });
    await g.apply(ev(s, 1), (ctx) => ctx.atCommit(st.row(ctx, { thumb: "new", owner: undefined })));
    const row = await rowOf("thumbs", s);
    expect(row).toMatchObject({ thumb: "new", owner: null, made: 7, eo_st: "done" });
    const reserved = Object.keys(row).filter((c) => c.startsWith("eo_"));
    expect(reserved.sort()).toEqual([...INLINE_POSTGRES_COLUMNS].sort());
  });

  it("a newer event's direct row write that never committed is not replaced by an older event that took over", async () => {
    const st = store();
    const s = subject();
    const key = stateKey(s, "", true);
    const start = Date.now();
    const claim = (position: string, identity: string, fence: number, nowMs: number): ClaimRequest => ({
      key,
      position,
      identity,
      nowMs,
      leaseUntilMs: nowMs + 100,
      expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
      supersede: false,
      fence,
      token: randomUUID(),
      leaseGraceMs: 0,
    });
    const commit = (fence: number, identity: string, thumb: string) =>
      st.commit({
        key,
        fence,
        identity,
        expiresAtSeconds: Math.ceil(start / 1000) + 3600,
        writes: [st.row({ stateKey: key }, { thumb })],
      });
    expect(await st.claim(claim(p(2), "dog", 10, start))).toMatchObject({ claimed: true });
    expect(await st.putRow({ stateKey: key, fence: 10 }, { thumb: "dog" })).toBe("applied");
    // The dog's commit never comes; its lease ends and the older cat takes the claim over.
    expect(await st.claim(claim(p(1), "cat", 20, start + 1000))).toMatchObject({ claimed: true });
    expect(await st.putRow({ stateKey: key, fence: 20 }, { thumb: "cat" })).toBe("stale");
    expect(await st.putRow({ stateKey: key, fence: 10 }, { thumb: "zombie dog" })).toBe("stale");
    expect(await commit(20, "cat", "cat")).toMatchObject({ committed: true, writes: [{ status: "stale" }] });
    // apply, between the two: committed, its row write stale.
    const between = `${p(1)}5`;
    const applied = await st.claimAndCommit({
      ...claim(between, "between", 30, start + 2000),
      writes: [st.row({ stateKey: key }, { thumb: "between" })],
    });
    expect(applied).toMatchObject({ claimed: true, writes: [{ status: "stale" }] });
    expect(await st.read(key)).toMatchObject({ status: "done", committedPosition: between });
    expect((await rowOf("thumbs", s)).thumb).toBe("dog");
    // The dog's redelivery commits its own work over it.
    expect(await st.claim(claim(p(2), "dog", 40, start + 3000))).toMatchObject({ claimed: true });
    expect(await commit(40, "dog", "dog 2")).toMatchObject({
      committed: true,
      writes: [{ status: "applied" }],
    });
    expect((await rowOf("thumbs", s)).thumb).toBe("dog 2");
  });

  it("takes the types of the user's table: an integer key through rowKey, a jsonb column, a timestamp", async () => {
    await db.pool.query(
      `CREATE TABLE ${table("orders")} (id bigint PRIMARY KEY, charge jsonb, charged_at timestamptz, status text)`,
    );
    await migrateInline(db.pool, { schema: db.schema, table: "orders", keyColumn: "id" });
    const st = new InlinePostgresStore({
      pool: db.pool,
      schema: db.schema,
      table: "orders",
      keyColumn: "id",
      rowKey: (k) => k.replace(/^o#order-/, ""),
    });
    const g = createGuard({ store: st });
    const at = new Date("2026-11-25T12:00:00Z");
    const charge = (n: number) => (ctx: ApplyContext) =>
      ctx.atCommit(st.row(ctx, { charge: { cents: 1250, n }, charged_at: at, status: "charged" }));
    expect((await g.apply(ev("order-42", 1), charge(1))).status).toBe("processed");
    expect((await g.apply(ev("order-42", 1), charge(2))).status).toBe("duplicate");
    const row = await rowOf("orders", 42, "id");
    expect(row).toMatchObject({ id: "42", charge: { cents: 1250, n: 1 }, status: "charged", eo_cpos: p(1) });
    expect((row.charged_at as Date).toISOString()).toBe(at.toISOString());
  });

  it("never proposes a row it does not insert: a BEFORE INSERT trigger sees each new row once", async () => {
    await db.pool.query(`CREATE TABLE ${table("inserts")} (pk text)`);
    await db.pool.query(`CREATE FUNCTION "${db.schema}".log_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${table("inserts")} VALUES (NEW.pk); RETURN NEW; END $$`);
    await db.pool.query(
      `CREATE TRIGGER log_insert BEFORE INSERT ON ${table("thumbs")} FOR EACH ROW EXECUTE FUNCTION "${db.schema}".log_insert()`,
    );
    try {
      const st = store();
      const g = createGuard({ store: st });
      const s = subject();
      const thumb = (ctx: ApplyContext) => ctx.atCommit(st.row(ctx, { thumb: "t" }));
      for (const n of [2, 2, 1, 3]) await g.apply(ev(s, n), thumb);
      await g.run(ev(s, 4), async () => {});
      const logged = await db.pool.query(`SELECT count(*)::int AS n FROM ${table("inserts")} WHERE pk = $1`, [
        s,
      ]);
      expect(logged.rows[0].n).toBe(1);
    } finally {
      await db.pool.query(`DROP TRIGGER log_insert ON ${table("thumbs")}`);
    }
  });

  it("a claim of a new key inserts the key and the state only: a NOT NULL column without default is a permanent error", async () => {
    await db.pool.query(`CREATE TABLE ${table("strict")} (pk text PRIMARY KEY, must text NOT NULL)`);
    await migrateInline(db.pool, { schema: db.schema, table: "strict" });
    const st = new InlinePostgresStore({ pool: db.pool, schema: db.schema, table: "strict" });
    const out = await createGuard({ store: st }).run(ev(subject(), 1), async () => {});
    expect(out.status).toBe("failed");
    const error = out.status === "failed" ? out.error : undefined;
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(false);
    expect(String((error as Error).message)).toMatch(/23502/);
    // apply writes the column with the state: it works.
    const s = subject();
    const applied = await createGuard({ store: st }).apply(ev(s, 1), (ctx) =>
      ctx.atCommit(st.row(ctx, { must: "given" })),
    );
    expect(applied.status).toBe("processed");
    expect(await rowOf("strict", s)).toMatchObject({ must: "given", eo_st: "done" });
  });

  it("folds only its own row writes, for the committing subject's row", async () => {
    const st = store();
    const key = stateKey(subject(), "", true);
    expect(st.canFold(st.row({ stateKey: key }, { thumb: "a" }))).toBe(true);
    expect(st.canFold(store().row({ stateKey: key }, { thumb: "a" }))).toBe(false);
    expect(st.canFold(postgresWrite("SELECT 1"))).toBe(false);
    const counting = countingPool(db.pool);
    const counted = new InlinePostgresStore({ pool: counting.pool, schema: db.schema, table: "thumbs" });
    const g = createGuard({ store: counted });
    const out = await g.apply(ev(subject(), 1), (ctx) => ctx.atCommit(postgresWrite("SELECT 1")));
    expect(out.status === "failed" && out.error).toBeInstanceOf(UnsupportedAtomicWriteError);
    // Another subject's row: refused before anything is sent.
    counting.reset();
    await expect(
      g.apply(ev(subject(), 1), (ctx) => ctx.atCommit(counted.row({ stateKey: key }, { thumb: "x" }))),
    ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    expect(counting.count.statements).toBe(0);
    expect(await rowOf("thumbs", counted.rowKeyOf(key))).toBeUndefined();
  });

  it("migrateInline is idempotent and needs a key column unique on its own", async () => {
    await migrateInline(db.pool, { schema: db.schema, table: "thumbs" });
    const columns = await db.pool.query(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'thumbs'",
      [db.schema],
    );
    expect(
      columns.rows
        .map((r: { column_name: string }) => r.column_name)
        .filter((c) => c.startsWith("eo_"))
        .sort(),
    ).toEqual([...INLINE_POSTGRES_COLUMNS].sort());
    await db.pool.query(`CREATE TABLE ${table("loose")} (pk text, a text, PRIMARY KEY (pk, a))`);
    await expect(migrateInline(db.pool, { schema: db.schema, table: "loose" })).rejects.toBeInstanceOf(
      OptionsError,
    );
    await expect(migrateInline(db.pool, { schema: db.schema, table: "missing" })).rejects.toBeInstanceOf(
      OptionsError,
    );
  });

  it("checks options and row columns eagerly", async () => {
    const pool = db.pool;
    expect(() => new InlinePostgresStore({ pool } as never)).toThrow(OptionsError);
    expect(() => new InlinePostgresStore({ pool, table: "t", tabel: "x" } as never)).toThrow(OptionsError);
    expect(() => new InlinePostgresStore({ pool, table: "t t" })).toThrow(OptionsError);
    expect(() => new InlinePostgresStore({ pool, table: "t", keyColumn: "eo_pk" })).toThrow(OptionsError);
    expect(() => new InlinePostgresStore({ pool, table: "t", preparedStatements: "yes" as never })).toThrow(
      OptionsError,
    );
    expect(() => new InlinePostgresStore({ table: "t" } as never)).toThrow(OptionsError);
    expect(() => new InlinePostgresStore({ pool, table: "t", rowKey: () => "" }).rowKeyOf("o#x")).toThrow(
      OptionsError,
    );
    const st = store();
    const ctx = { stateKey: "o#s" };
    expect(st.rowKeyOf("o#bucket/a.jpg")).toBe("bucket/a.jpg");
    expect(st.rowKeyOf("u#3#abcid-1")).toBe("u#3#abcid-1");
    expect(() => st.row(ctx, { eo_fence: 1 })).toThrow(OptionsError);
    expect(() => st.row(ctx, { pk: "other" })).toThrow(OptionsError);
    expect(() => st.row(ctx, { "thumb; DROP TABLE x": 1 })).toThrow(OptionsError);
    expect(() => st.row({} as never, { thumb: 1 })).toThrow(OptionsError);
    await expect(st.putRow({ stateKey: "o#s", fence: 1 }, {})).rejects.toBeInstanceOf(OptionsError);
  });
});

describe("InlinePostgresStateAdmin: the row → state key mapping in SQL", () => {
  // The admin lists and pages by state key computed in SQL: it must be stateKeyOfInlineRow, or a row is listed under
  // another key (and `get` / `forget` by that key reach another row).
  it("equals stateKeyOfInlineRow over adversarial rows, including every row inlineRowKey makes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(adversarialText({ storable: true }), { minLength: 1, maxLength: 40 }),
        async (texts) => {
          const rows = texts.flatMap((t) => [t, inlineRowKey(stateKey(t, "", true)), inlineRowKey(`u#${t}`)]);
          const out = await db.pool.query(
            `SELECT ${stateKeyOfInlineRowSql("r")} AS k FROM unnest($1::text[]) WITH ORDINALITY AS t(r, i) ORDER BY i`,
            [rows],
          );
          expect(out.rows.map((r: { k: string }) => r.k)).toEqual(rows.map(stateKeyOfInlineRow));
        },
      ),
      { numRuns: 60 },
    );
  });
});
