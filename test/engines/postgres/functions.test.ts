import { randomUUID } from "node:crypto";
import fc from "fast-check";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { type ApplyContext, createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import type { ClaimRequest } from "../../../src/core/state.js";
import type { AtomicWrite } from "../../../src/core/store.js";
import { InlinePostgresStore, migrateInline } from "../../../src/engines/postgres/index.js";
import type { PostgresPool } from "../../../src/engines/postgres/pool.js";
import { adversarialText } from "../../kit/adversarial.js";
import { guardEvent as ev, millisecondApartClock } from "../../kit/index.js";
import { type TestDatabase, testDatabase } from "../../kit/postgres.js";

/*
 * Inline state's server functions (`serverFunctions`, src/engines/postgres/inline-functions.ts): each step is one call
 * of its function, with the answers and rows of the step's statement (checked side by side over random sequences of
 * steps); a table changed after migrateInline, a function not installed and a binary value fall back to the
 * statement, and migrateInline creates the functions once, beside live traffic.
 */
const p = positionFromNumber;
let db: TestDatabase;
const table = (name: string) => `"${db.schema}"."${name}"`;
const COLUMNS = `pk text PRIMARY KEY, thumb text, made int NOT NULL DEFAULT 0, data jsonb, at timestamptz,
  n numeric(6,2), tags text[], bin bytea`;

beforeAll(async () => {
  db = await testDatabase("eonce_fn");
  for (const t of ["fn", "stmt"]) {
    await db.pool.query(`CREATE TABLE ${table(t)} (${COLUMNS})`);
    await migrateInline(db.pool, { schema: db.schema, table: t, serverFunctions: t === "fn" });
  }
});
afterAll(async () => db?.close());

/** A pool that records the text of every statement it runs. */
function recordingPool(pool: pg.Pool): { pool: PostgresPool; texts: string[] } {
  const texts: string[] = [];
  const query = (q: string | { text: string }, params?: unknown[]) => {
    texts.push(typeof q === "string" ? q : q.text);
    return pool.query(q as string, params);
  };
  return { texts, pool: { query: query as PostgresPool["query"], connect: () => pool.connect() } };
}

const subject = () => `bucket/${randomUUID()}`;
const rowOf = async (name: string, key: unknown) =>
  (await db.pool.query(`SELECT * FROM ${table(name)} WHERE pk = $1`, [key])).rows[0];
const calls = (texts: string[]) =>
  texts.map(
    (t) =>
      t.match(/^SELECT "[^"]+"\."eonce_([a-z]+)_/)?.[1] ??
      (t.startsWith("WITH old") ? "statement" : t.includes("FROM pg_proc") ? "fits?" : t),
  );

describe("InlinePostgresStore with server functions", () => {
  const setup = (name = "fn", options: { serverFunctions?: boolean; preparedStatements?: boolean } = {}) => {
    const recording = recordingPool(db.pool);
    const store = new InlinePostgresStore({
      pool: recording.pool,
      schema: db.schema,
      table: name,
      ...options,
    });
    return { ...recording, store, guard: createGuard({ store, clock: millisecondApartClock() }) };
  };
  const thumb = (store: InlinePostgresStore, value: string) => (ctx: ApplyContext) =>
    ctx.atCommit(store.row(ctx, { thumb: value }));

  it("each step is one call of its function: apply, duplicate and stale 1 each; run 2; failed 2; putRow 1", async () => {
    const { guard, store, texts } = setup();
    const s = subject();
    expect((await guard.apply(ev(s, 2), thumb(store, "t2"))).status).toBe("processed");
    expect((await guard.apply(ev(s, 2), thumb(store, "t2"))).status).toBe("duplicate");
    expect((await guard.apply(ev(s, 1), thumb(store, "t1"))).status).toBe("stale");
    expect(calls(texts)).toEqual(["apply", "apply", "apply"]);
    texts.length = 0;
    await guard.run(ev(s, 3), async (ctx) => {
      expect(await store.putRow(ctx, { thumb: "direct" })).toBe("applied");
      ctx.atCommit(store.row(ctx, { made: 3 }));
    });
    await guard.run(ev(s, 4), async () => Promise.reject(new Error("boom")));
    expect(calls(texts)).toEqual(["claim", "put", "commit", "claim", "release"]);
    expect(await rowOf("fn", s)).toMatchObject({
      thumb: "direct",
      made: 3,
      eo_st: "released",
      eo_cpos: p(3),
    });
  });

  it("serverFunctions: false, or preparedStatements alone, sends the statements; named calls are prepared once per shape", async () => {
    for (const options of [{ serverFunctions: false }, { preparedStatements: true }]) {
      const plain = setup("fn", options);
      await plain.guard.apply(ev(subject(), 1), thumb(plain.store, "a"));
      expect(calls(plain.texts), JSON.stringify(options)).toEqual(["statement"]);
    }
    const client = await db.pool.connect();
    try {
      const named = new InlinePostgresStore({
        pool: { query: client.query.bind(client), connect: async () => client } as never,
        schema: db.schema,
        table: "fn",
        preparedStatements: true,
        serverFunctions: true,
      });
      const g = createGuard({ store: named, clock: millisecondApartClock() });
      for (const n of [1, 2, 3])
        await g.apply(ev(subject(), n), (ctx) => ctx.atCommit(named.row(ctx, { thumb: "x" })));
      const prepared = await client.query(
        "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'eonce_%' AND statement LIKE '%eonce_apply_%'",
      );
      expect(prepared.rows.map((r: { statement: string }) => calls([r.statement])[0])).toEqual(["apply"]);
    } finally {
      client.release();
    }
  });

  it("a column added or retyped after migrateInline is written through the function, typed by the table", async () => {
    await db.pool.query(`CREATE TABLE ${table("grows")} (pk text PRIMARY KEY, code int)`);
    await migrateInline(db.pool, { schema: db.schema, table: "grows" });
    const { guard, store, texts } = setup("grows");
    const s = subject();
    await guard.apply(ev(s, 1), (ctx) => ctx.atCommit(store.row(ctx, { code: "007" })));
    await db.pool.query(`ALTER TABLE ${table("grows")} ADD COLUMN label text, ALTER COLUMN code TYPE text`);
    await guard.apply(ev(s, 2), (ctx) => ctx.atCommit(store.row(ctx, { code: "007", label: "new" })));
    expect(calls(texts)).toEqual(["apply", "apply"]);
    expect(await rowOf("grows", s)).toMatchObject({ code: "007", label: "new", eo_cpos: p(2) });
  });

  it("not installed (migrateInline with serverFunctions: false): the failed call's statement runs, then statements only", async () => {
    const { guard, store, texts } = setup("stmt");
    const s = subject();
    expect((await guard.apply(ev(s, 1), thumb(store, "a"))).status).toBe("processed");
    expect((await guard.apply(ev(s, 2), thumb(store, "b"))).status).toBe("processed");
    expect(calls(texts)).toEqual(["apply", "fits?", "statement", "statement"]);
    expect(await rowOf("stmt", s)).toMatchObject({ thumb: "b", eo_cpos: p(2) });
  });

  it("the key column retyped since migrateInline: the function serves nothing, the statement runs, until migrateInline makes it again", async () => {
    await db.pool.query(`CREATE TABLE ${table("rekey")} (pk text PRIMARY KEY, thumb text)`);
    await migrateInline(db.pool, { schema: db.schema, table: "rekey" });
    await db.pool.query(`ALTER TABLE ${table("rekey")} ALTER COLUMN pk TYPE varchar(200)`);
    const before = setup("rekey");
    const s = subject();
    await before.guard.apply(ev(s, 1), thumb(before.store, "a"));
    await before.guard.apply(ev(s, 2), thumb(before.store, "b"));
    expect(calls(before.texts)).toEqual(["apply", "statement", "statement"]);
    await migrateInline(db.pool, { schema: db.schema, table: "rekey" });
    const after = setup("rekey");
    await after.guard.apply(ev(s, 3), thumb(after.store, "c"));
    expect(calls(after.texts)).toEqual(["apply"]);
    expect(await rowOf("rekey", s)).toMatchObject({ thumb: "c", eo_cpos: p(3) });
  });

  it.each([
    {
      from: "text",
      to: "uuid",
      key: (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    },
    { from: "integer", to: "text", key: (i: number) => String(i) },
  ])(
    "the key column retyped $from → $to since migrateInline: apply and run's claim run the statement (the call's operator error is not the caller's)",
    async ({ from, to, key }) => {
      const name = `re_${from}_${to}`;
      await db.pool.query(`CREATE TABLE ${table(name)} (pk ${from} PRIMARY KEY, thumb text)`);
      await migrateInline(db.pool, { schema: db.schema, table: name });
      await db.pool.query(`ALTER TABLE ${table(name)} ALTER COLUMN pk TYPE ${to} USING pk::text::${to}`);
      const rows = new Map<string, string>();
      const rowKey = (k: string) => rows.get(k) ?? rows.set(k, key(rows.size + 1)).get(k) ?? "";
      const open = () => {
        const recording = recordingPool(db.pool);
        const store = new InlinePostgresStore({
          pool: recording.pool,
          schema: db.schema,
          table: name,
          rowKey,
        });
        return { ...recording, store, guard: createGuard({ store, clock: millisecondApartClock() }) };
      };
      const s = subject();
      const applied = open();
      expect((await applied.guard.apply(ev(s, 1), thumb(applied.store, "a"))).status).toBe("processed");
      expect((await applied.guard.apply(ev(s, 2), thumb(applied.store, "b"))).status).toBe("processed");
      expect(calls(applied.texts)).toEqual(["apply", "fits?", "statement", "statement"]);
      const ran = open();
      const out = await ran.guard.run(ev(s, 3), async (ctx) =>
        ctx.atCommit(ran.store.row(ctx, { thumb: "c" })),
      );
      expect(out.status).toBe("processed");
      // The claim's call, the fallback's check, then statements only: the claim's and the commit's (a commit retried
      // after a transient error under load is one more statement, still no function call).
      const [first, check, ...rest] = calls(ran.texts);
      expect([first, check]).toEqual(["claim", "fits?"]);
      expect(rest.length, rest.join()).toBeGreaterThanOrEqual(2);
      expect(new Set(rest)).toEqual(new Set(["statement"]));
      expect(await rowOf(name, key(1))).toMatchObject({ thumb: "c", eo_cpos: p(3) });
    },
  );

  it("a call the server refuses for another reason (a NOT NULL column): its error is the caller's, the store stays on functions", async () => {
    await db.pool.query(
      `CREATE TABLE ${table("strict")} (pk text PRIMARY KEY, thumb text, must text NOT NULL)`,
    );
    await migrateInline(db.pool, { schema: db.schema, table: "strict" });
    const { guard, store, texts } = setup("strict");
    for (const n of [1, 2]) {
      const out = await guard.apply(ev(subject(), n), thumb(store, "a"));
      expect(out).toMatchObject({ status: "failed", error: { retryable: false } });
      expect(String((out as { error?: Error }).error?.message)).toContain("(23502)");
    }
    expect(calls(texts)).toEqual(["apply", "fits?", "apply", "fits?"]);
  });

  it("a binary value goes through the statement (node-postgres sends Buffers as bytes); the store stays on functions", async () => {
    const { guard, store, texts } = setup();
    const s = subject();
    const bytes = Buffer.from([0, 1, 2, 255]);
    await guard.apply(ev(s, 1), (ctx) => ctx.atCommit(store.row(ctx, { bin: bytes, thumb: "b" })));
    await guard.apply(ev(s, 2), thumb(store, "c"));
    expect(calls(texts)).toEqual(["statement", "apply"]);
    expect(await rowOf("fn", s)).toMatchObject({ bin: bytes, thumb: "c" });
  });

  it("checks the option", () => {
    const pool = db.pool;
    expect(() => new InlinePostgresStore({ pool, table: "t", serverFunctions: "yes" as never })).toThrow(
      OptionsError,
    );
  });
});

describe("migrateInline and the server functions", () => {
  const functionsOf = async (name: string) =>
    (
      await db.pool.query(
        `SELECT proname FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'eonce\\_%\\_' || $2 || '\\_%'
         ORDER BY proname`,
        [db.schema, name],
      )
    ).rows.map((r: { proname: string }) => r.proname.replace(/_[0-9a-f]{10}$/, ""));

  it("creates one function per step, once: nothing missing is one catalog read (no DDL, no lock)", async () => {
    expect(await functionsOf("fn")).toEqual(
      ["apply", "claim", "commit", "put", "release", "renew"].map((s) => `eonce_${s}_fn`),
    );
    expect(await functionsOf("stmt")).toEqual([]);
    const recording = recordingPool(db.pool);
    await migrateInline(recording.pool, { schema: db.schema, table: "fn" });
    expect(recording.texts).toHaveLength(2); // the key's unique index, then the catalog
  });

  it("a missing function is created beside live readers and writers of the table (no lock on it)", async () => {
    const [apply] = (
      await db.pool.query(
        `SELECT proname FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'eonce\\_apply\\_fn\\_%'`,
        [db.schema],
      )
    ).rows.map((r: { proname: string }) => r.proname);
    await db.pool.query(`DROP FUNCTION "${db.schema}"."${apply}"`);
    const writer = await db.pool.connect();
    try {
      await writer.query("BEGIN");
      await writer.query(`UPDATE ${table("fn")} SET made = made WHERE pk = 'nobody'`);
      await migrateInline(db.pool, { schema: db.schema, table: "fn", lockTimeoutMs: 500 });
    } finally {
      await writer.query("ROLLBACK");
      writer.release();
    }
    expect(await functionsOf("fn")).toContain("eonce_apply_fn");
  });

  it("checks the option; a store's options object with it is accepted", async () => {
    await expect(migrateInline(db.pool, { table: "fn", serverFunctions: 1 } as never)).rejects.toBeInstanceOf(
      OptionsError,
    );
    await migrateInline(db.pool, {
      pool: db.pool,
      schema: db.schema,
      table: "fn",
      serverFunctions: true,
    } as never);
  });
});

/*
 * The same steps on two identical tables, one store calling the functions and one sending the statements: every
 * answer and every row must be the same. Steps are drawn over two keys with positions, fences, identities, leases
 * and row writes that collide (retries with the same token, stale positions, expired and live holders, superseding,
 * row writes older than the row's), values with quotes, backslashes, dollar quotes and format directives.
 */
describe("server functions and statements agree", () => {
  const pair = () =>
    (["fn", "stmt"] as const).map(
      (name) =>
        new InlinePostgresStore({
          pool: db.pool,
          schema: db.schema,
          table: name,
          serverFunctions: name === "fn",
        }),
    );
  const text = fc.oneof(
    adversarialText({ storable: true }),
    fc.constantFrom(
      "$q$",
      "$eonce$",
      "'; DROP TABLE x; --",
      "\\",
      "%1$I %2$L %s",
      "null",
      "NULL",
      " padded\t",
      "\n",
    ),
  );
  const columns = fc.record(
    {
      thumb: fc.option(text),
      made: fc.integer({ min: -1000, max: 1000 }),
      data: fc.option(
        fc.dictionary(fc.string({ maxLength: 4 }), fc.oneof(fc.integer(), fc.string({ maxLength: 6 }))),
      ),
      at: fc.date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }),
      n: fc.constantFrom(0, 1.005, -12.5, "3.14159"),
      tags: fc.array(text, { maxLength: 3 }),
    },
    { requiredKeys: [] },
  );
  const step = fc.record({
    op: fc.constantFrom(
      "claim",
      "claim",
      "apply",
      "apply",
      "apply",
      "commit",
      "commit",
      "renew",
      "release",
      "put",
    ),
    key: fc.constantFrom(0, 0, 1),
    position: fc.integer({ min: 1, max: 4 }),
    identity: fc.constantFrom("a", "b"),
    token: fc.constantFrom("t1", "t2", "t3"),
    // A fence past every earlier one, the last one taken (the holder's), or an older one.
    fence: fc.constantFrom("new", "last", "last", "older"),
    // Time passes: a lease (500 ms) ends after a step or a few.
    advance: fc.constantFrom(0, 100, 300, 700),
    supersede: fc.boolean(),
    row: fc.option(columns, { nil: undefined }),
    result: fc.option(text, { nil: undefined }),
  });
  type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;
  /** The sequence's clock and fences, the same for both stores. */
  interface Timeline {
    now: number;
    fences: number[];
  }
  function advance(t: Timeline, s: Step): number {
    t.now += s.advance;
    const last = t.fences.at(-1) ?? 1000;
    if (s.fence === "new" || t.fences.length === 0) t.fences.push(last + 1000 + t.fences.length);
    if (s.fence === "older") return last - 500;
    return t.fences.at(-1) as number;
  }

  async function run(store: InlinePostgresStore, keys: string[], s: Step, now: number, fence: number) {
    const key = keys[s.key] as string;
    const writes: AtomicWrite[] = s.row ? [store.row({ stateKey: key }, s.row)] : [];
    const claim: ClaimRequest = {
      key,
      position: p(s.position),
      identity: s.identity,
      nowMs: now,
      leaseUntilMs: now + 500,
      expiresAtSeconds: 1000 + now,
      supersede: s.supersede,
      fence,
      token: s.token,
      leaseGraceMs: 0,
    };
    const request = { key, fence, identity: s.identity, expiresAtSeconds: 2000, writes, result: s.result };
    switch (s.op) {
      case "claim":
        return store.claim(claim);
      case "apply":
        return store.claimAndCommit({
          ...claim,
          writes,
          result: s.result,
          resultOmittedBytes: now % 3 || undefined,
        });
      case "commit":
        return store.commit(request);
      case "renew":
        return store.renew({ key, fence, leaseUntilMs: now + 900, expiresAtSeconds: 900 + now });
      case "release":
        return store.release({ key, fence });
      default:
        return s.row ? store.putRow({ stateKey: key, fence }, s.row) : store.read(key);
    }
  }

  it("the same answers and the same rows over random sequences of steps", async () => {
    const stores = pair();
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const keys = [`o#${subject()}`, `o#${subject()}`];
        const timeline: Timeline = { now: 0, fences: [] };
        for (const s of steps) {
          const fence = advance(timeline, s);
          const answers = [];
          for (const store of stores) {
            const answer = await run(store, keys, s, timeline.now, fence).then(
              (out) => ({ out }),
              (error: Error) => ({ error: error.message.replace(/"fn"|"stmt"/g, "<t>") }),
            );
            answers.push(JSON.parse(JSON.stringify(answer).replaceAll(/\\"(fn|stmt)\\"/g, "<t>")));
          }
          expect(answers[0], JSON.stringify(s)).toEqual(answers[1]);
        }
        for (const key of keys) {
          const row = (await rowOf("fn", key.slice(2))) ?? {};
          expect(row).toEqual((await rowOf("stmt", key.slice(2))) ?? {});
        }
      }),
      { numRuns: 100 },
    );
  });
});
