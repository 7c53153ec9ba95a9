import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { Command, CommanderError } from "commander";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { registerState } from "../../src/cli/state.js";
import { createGuard, type Guard } from "../../src/core/guard.js";
import { positionFromNumber } from "../../src/core/position.js";
import { stateKey } from "../../src/core/state-key.js";
import type { StateStore } from "../../src/core/store.js";
import { InlineDynamoDBStore } from "../../src/engines/dynamodb/inline-store.js";
import { createStateTable, createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { migrateInline } from "../../src/engines/postgres/inline-schema.js";
import { InlinePostgresStore } from "../../src/engines/postgres/inline-store.js";
import { migrate } from "../../src/engines/postgres/schema.js";
import { PostgresStore } from "../../src/engines/postgres/store.js";
import { SqliteStore } from "../../src/engines/sqlite/store.js";
import { localDynamoDB } from "../kit/dynamodb.js";
import { POSTGRES_URL, type TestDatabase, testDatabase } from "../kit/postgres.js";
import { rowKey } from "./fixtures/row-key.js";

/** The custom row mapping's module, as an operator passes it. */
const ROW_KEY = "test/cli/fixtures/row-key.ts";

/*
 * `eonce state` on every store kind it connects to, through the commander program in-process (one spawned smoke test
 * at the end). State is made by the real guard and store; the command connects on its own, as an operator would.
 */

interface Target {
  store: StateStore;
  /** The connection flags of `eonce state` for this store. */
  flags: string[];
  /** The user's attributes of a row (inline state only: forget must leave them). */
  userRow?(row: string): Promise<Record<string, unknown> | undefined>;
  /** PostgreSQL kinds: the test database (its schema holds the tables). */
  db?: TestDatabase;
  /** Inline kinds: a store on the same table with a custom row mapping. */
  withRowKey?(rowKey: (stateKey: string) => string): StateStore;
  close(): Promise<void>;
}

const REGION = ["--region", "us-east-1"];

/** PostgreSQL's flags: with `inline`, its inline mode (`--inline`). */
const postgresFlags = (inline: boolean, schema: string, table: string) => [
  "--store",
  "postgres",
  ...(inline ? ["--inline"] : []),
  "--database-url",
  POSTGRES_URL,
  "--schema",
  schema,
  "--table",
  table,
];

const KINDS: { name: string; make(): Promise<Target> }[] = [
  {
    name: "dynamodb",
    async make() {
      const client = localDynamoDB();
      const tableName = `cli-state-${randomUUID().slice(0, 8)}`;
      await createStateTable(client, { tableName });
      return {
        store: new DynamoDBStore({ client, tableName }),
        flags: ["--table", tableName, "--endpoint", inject("dynamodbEndpoint"), ...REGION],
        close: async () => client.destroy(),
      };
    },
  },
  {
    name: "dynamodb-inline",
    async make() {
      const client = localDynamoDB();
      const tableName = `cli-inline-${randomUUID().slice(0, 8)}`;
      await createTableIfMissing(client, tableName, "pk");
      return {
        store: new InlineDynamoDBStore({ client, tableName }),
        withRowKey: (rowKey) => new InlineDynamoDBStore({ client, tableName, rowKey }),
        flags: [
          "--store",
          "dynamodb",
          "--inline",
          "--table",
          tableName,
          "--endpoint",
          inject("dynamodbEndpoint"),
          ...REGION,
        ],
        userRow: async (row) => {
          const out = await client.send(
            new GetItemCommand({ TableName: tableName, Key: { pk: { S: row } }, ConsistentRead: true }),
          );
          return out.Item;
        },
        close: async () => client.destroy(),
      };
    },
  },
  {
    name: "postgres",
    async make() {
      const db = await testDatabase("cli_state");
      await migrate(db.pool, { schema: db.schema, table: "state" });
      return {
        store: new PostgresStore({ pool: db.pool, schema: db.schema, table: "state" }),
        flags: postgresFlags(false, db.schema, "state"),
        close: () => db.close(),
      };
    },
  },
  {
    name: "postgres-inline",
    async make() {
      const db = await testDatabase("cli_state_inline");
      const table = `"${db.schema}"."photos"`;
      await db.pool.query(`CREATE TABLE ${table} (pk text PRIMARY KEY, caption text)`);
      await migrateInline(db.pool, { schema: db.schema, table: "photos" });
      // A row of the user's without state: no command may list or forget it.
      await db.pool.query(`INSERT INTO ${table} (pk, caption) VALUES ('photos/no-state.jpg', 'a dog')`);
      return {
        store: new InlinePostgresStore({ pool: db.pool, schema: db.schema, table: "photos" }),
        withRowKey: (rowKey) =>
          new InlinePostgresStore({ pool: db.pool, schema: db.schema, table: "photos", rowKey }),
        flags: postgresFlags(true, db.schema, "photos"),
        userRow: async (row) => (await db.pool.query(`SELECT * FROM ${table} WHERE pk = $1`, [row])).rows[0],
        db,
        close: () => db.close(),
      };
    },
  },
  {
    name: "sqlite",
    async make() {
      const dir = mkdtempSync(join(tmpdir(), "eonce-cli-state-"));
      const filename = join(dir, "state.db");
      const store = new SqliteStore({ filename, synchronous: "normal" });
      return {
        store,
        flags: ["--store", "sqlite", "--file", filename],
        close: async () => {
          store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

interface CliResult {
  code: number;
  out: string;
  err: string;
}

/**
 * `eonce state …` in-process: commander's own errors (usage) exit 2, as in src/cli/main.ts. `nowMs`: the operator's
 * clock reads that (a clock that runs ahead of the holder's), else the process's.
 */
async function cli(args: string[], nowMs?: number): Promise<CliResult> {
  const r: CliResult = { code: -1, out: "", err: "" };
  const out = (s: string) => {
    r.out += s;
  };
  const err = (s: string) => {
    r.err += s;
  };
  const program = new Command("eonce").exitOverride().configureOutput({ writeOut: out, writeErr: err });
  registerState(program, {
    out,
    err,
    exit: (code) => {
      r.code = code;
    },
    now: () => nowMs ?? Date.now(),
  });
  try {
    await program.parseAsync(["state", ...args], { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    r.code = error.exitCode === 0 ? 0 : 2;
  }
  return r;
}

const json = (r: CliResult) => JSON.parse(r.out) as Record<string, unknown> & { records: { key: string }[] };
const p = positionFromNumber;
const MINUTE = 60_000;

/** A claim as a crashed (or a live) holder left it, taken `agoMs` ago with a lease of `leaseMs` from then. */
async function claimAt(store: StateStore, subject: string, pos: number, agoMs: number, leaseMs: number) {
  return claimKey(store, `o#${subject}`, pos, Date.now() - agoMs, leaseMs);
}

/** A claim of the state key `key` taken at `nowMs` (its fence is that time's), with a lease of `leaseMs`. */
async function claimKey(store: StateStore, key: string, pos: number, nowMs: number, leaseMs: number) {
  const fence = nowMs * 1000;
  const r = await store.claim({
    key,
    position: p(pos),
    identity: `${p(pos)}:created`,
    nowMs,
    leaseUntilMs: nowMs + leaseMs,
    expiresAtSeconds: Math.ceil(Date.now() / 1000) + 3600,
    supersede: false,
    fence,
    token: `token-${pos}`,
    leaseGraceMs: 0,
  });
  expect(r.claimed).toBe(true);
  return fence;
}

const event = (subject: string, pos = 1) => ({ subject, identity: `${p(pos)}:created`, position: p(pos) });

beforeAll(() => {
  // The command takes the AWS SDK's standard configuration; DynamoDB Local accepts any key pair.
  vi.stubEnv("AWS_ACCESS_KEY_ID", "local");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "local");
});
afterAll(() => {
  vi.unstubAllEnvs();
});

describe.each(KINDS)("eonce state: $name", (kind) => {
  let t: Target;
  let guard: Guard;
  const s = {
    crashed: "photos/crashed.jpg",
    live: "photos/live.jpg",
    released: "photos/released.jpg",
    done: "photos/done.jpg",
    oldDone: "photos/old-done.jpg",
  };
  const key = (subject: string) => `o#${subject}`;
  const state = (...args: string[]) => cli([...args, ...t.flags]);
  let liveFence = 0;

  beforeAll(async () => {
    t = await kind.make();
    guard = createGuard({ store: t.store, leaseMs: 5000 });
    // Three hours ago, committed in one request (apply): the oldest record.
    const oldMs = Date.now() - 180 * MINUTE;
    const old = createGuard({ store: t.store, leaseMs: 5000, now: () => oldMs });
    expect((await old.apply(event(s.oldDone), () => "old")).status).toBe("processed");
    expect((await guard.run(event(s.done), async () => ({ n: 1 }))).status).toBe("processed");
    const failed = await guard.run(event(s.released), async () => {
      throw new Error("handler failed");
    });
    expect(failed.status).toBe("failed");
    // The live claim is the older one: the order puts the crashed holder first by its lease, not by its age.
    liveFence = await claimAt(t.store, s.live, 7, 5 * MINUTE, 15 * MINUTE);
    await claimAt(t.store, s.crashed, 3, 2 * MINUTE, 30_000); // its lease ended 90 s ago
  });
  afterAll(async () => t?.close());

  it("get: decodes a done record by subject, and the same by its state key", async () => {
    const stored = await t.store.read(key(s.done));
    const r = await state("get", s.done);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(new RegExp(`^key +${key(s.done)}$`, "m"));
    expect(r.out).toMatch(/^status +done$/m);
    expect(r.out).toMatch(new RegExp(`^result +${Buffer.byteLength(stored?.result ?? "")} bytes$`, "m"));
    expect(r.out).toMatch(/^lease +none$/m);
    const byKey = json(await state("get", key(s.done), "--json"));
    expect(byKey).toMatchObject({
      key: key(s.done),
      subject: null,
      status: "done",
      position: p(1),
      fence: stored?.fence,
      committedPosition: p(1),
      committedIdentity: `${p(1)}:created`,
      resultBytes: Buffer.byteLength(stored?.result ?? ""),
      attempts: 0,
      lease: "none",
      token: stored?.token,
    });
    expect(byKey.expiresAt).toBe(new Date((stored?.expiresAtSeconds ?? 0) * 1000).toISOString());
    expect(byKey.expiresInMs).toBeGreaterThan(6 * 24 * 60 * MINUTE); // the guard's default: 7 days
    expect(byKey.ageMs).toBeGreaterThanOrEqual(0);
    expect(byKey.ageMs).toBeLessThan(10 * MINUTE);
  });

  it("get: says whether a running claim's lease holds, and how long is left or since it ended", async () => {
    const crashed = json(await state("get", s.crashed, "--json"));
    expect(crashed).toMatchObject({ status: "running", lease: "expired", attempts: 1, subject: s.crashed });
    expect(crashed.leaseLeftMs).toBeLessThan(-80_000);
    const live = json(await state("get", s.live, "--json"));
    expect(live).toMatchObject({ status: "running", lease: "live", fence: liveFence, token: "token-7" });
    expect(live.leaseLeftMs).toBeGreaterThan(8 * MINUTE);
    expect((await state("get", s.crashed)).out).toMatch(/^lease +expired 1m \d\ds ago/m);
  });

  it("get: a subject without state exits 1, and --json says not-found", async () => {
    const r = await state("get", "photos/none.jpg", "--json");
    expect(r.code).toBe(1);
    expect(r.err).toContain("no state for o#photos/none.jpg");
    expect(json(r)).toEqual({ error: "not-found", key: "o#photos/none.jpg" });
  });

  it("list: held or stuck first (expired lease, running, released, done), oldest claim first within each", async () => {
    const r = await state("list", "--json");
    expect(r.code, r.err).toBe(0);
    expect(json(r).records.map((v) => v.key)).toEqual(
      [s.crashed, s.live, s.released, s.oldDone, s.done].map(key),
    );
    const table = (await state("list")).out.split("\n");
    expect(table[0]).toMatch(/^STATUS +LEASE +AGE +ATTEMPTS +FENCE +POSITION +KEY$/);
    expect(table[1]).toMatch(new RegExp(`^running +expired .* ${key(s.crashed)}$`));
    expect(table[2]).toMatch(new RegExp(`^running +\\d+m \\d\\ds left .* ${key(s.live)}$`));
    expect(table[4]).toMatch(/^done +- +3h 0\dm /);
  });

  it("list: --status, --older-than and --limit filter on the store, in the same order", async () => {
    const keys = async (...args: string[]) =>
      json(await state("list", "--json", ...args)).records.map((v) => v.key);
    expect(await keys("--status", "done")).toEqual([key(s.oldDone), key(s.done)]);
    expect(await keys("--status", "running")).toEqual([key(s.crashed), key(s.live)]);
    expect(await keys("--status", "released")).toEqual([key(s.released)]);
    expect(await keys("--older-than", "90s")).toEqual([key(s.crashed), key(s.live), key(s.oldDone)]);
    expect(await keys("--older-than", "3m")).toEqual([key(s.live), key(s.oldDone)]);
    expect(await keys("--older-than", "2h")).toEqual([key(s.oldDone)]);
    expect(await keys("--older-than", "4m", "--status", "running")).toEqual([key(s.live)]);
    expect(await keys("--limit", "2")).toEqual([key(s.crashed), key(s.live)]);
  });

  it("list: records of the same fence order by state key, an ordered subject's and a dedupe-only event's alike", async () => {
    // Inline state keeps a subject's record in the row `zz/tie`, which sorts after `u#…`; its state key does not.
    const at = Date.now() - 10 * 24 * 60 * MINUTE;
    const unordered = stateKey("a/tie", `${p(1)}:created`, false);
    await claimKey(t.store, unordered, 1, at, 30_000);
    await claimKey(t.store, key("zz/tie"), 1, at, 30_000);
    const r = await state("list", "--json", "--status", "running", "--older-than", "9d");
    expect(r.code, r.err).toBe(0);
    expect(json(r).records.map((v) => v.key)).toEqual([key("zz/tie"), unordered]);
  });

  it("release: refused when the fence moved, naming what holds now; released with the fence that holds", async () => {
    const subject = "photos/release-me.jpg";
    const fence = await claimAt(t.store, subject, 5, 0, 10 * MINUTE);
    const moved = await state("release", subject, "--fence", String(fence - 1), "--json");
    expect(moved.code).toBe(1);
    expect(moved.err).toContain(
      `refused: the fence moved: ${key(subject)} holds fence ${fence}: running, position ${p(5)}, lease `,
    );
    // 10m 00s when the command read the record in the millisecond it was claimed (SQLite is that fast).
    expect(moved.err).toMatch(/, lease (9m \d\ds|10m 00s) left/);
    expect(json(moved)).toMatchObject({
      error: "refused",
      key: key(subject),
      state: { fence, lease: "live" },
    });
    expect((await t.store.read(key(subject)))?.status).toBe("running");

    const ok = await state("release", subject, "--fence", String(fence));
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toContain(`released ${key(subject)} at fence ${fence}`);
    expect(await t.store.read(key(subject))).toMatchObject({ status: "released", fence });
    // The redelivery claims at once, though the old lease had ten minutes left.
    const again = await guard.run(event(subject, 5), async () => "ran");
    expect(again).toMatchObject({ status: "processed", result: "ran" });
  });

  it("release: a record that is not running is refused (exit 1); one without state is not found", async () => {
    const stored = await t.store.read(key(s.done));
    const done = await state("release", s.done, "--fence", String(stored?.fence));
    expect(done.code).toBe(1);
    expect(done.err).toContain(`is done, not running: nothing to release`);
    expect((await state("release", "photos/none.jpg", "--fence", "1")).code).toBe(1);
  });

  it("forget: refused while a live lease holds the record; deleted once the lease has expired", async () => {
    const subject = "photos/forget-live.jpg";
    const fence = await claimAt(t.store, subject, 4, 0, 10 * MINUTE);
    const r = await state("forget", subject, "--yes", "--json");
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `a live lease holds ${key(subject)} (fence ${fence}: running, position ${p(4)}, lease`,
    );
    expect(json(r)).toMatchObject({ error: "refused", state: { fence, lease: "live" } });
    expect(await t.store.read(key(subject))).toMatchObject({ status: "running", fence });

    const crashed = "photos/forget-crashed.jpg";
    await claimAt(t.store, crashed, 4, 2 * MINUTE, 30_000);
    const gone = await state("forget", crashed, "--yes", "--json");
    expect(gone.code, gone.err).toBe(0);
    expect(json(gone)).toMatchObject({ forgotten: true, record: { key: key(crashed), lease: "expired" } });
    expect(await t.store.read(key(crashed))).toBeUndefined();
  });

  it("forget: a lease that ended 200 ms ago by the operator's clock is refused within the clock skew grace; --force deletes", async () => {
    // The holder's lease ends at `endMs`; the operator's clock reads 200 ms past it (it may run ahead of the holder's).
    const claimedMs = Date.now();
    const endMs = claimedMs + 30_000;
    const operatorMs = endMs + 200;
    const subject = "photos/forget-skew.jpg";
    const fence = await claimKey(t.store, key(subject), 4, claimedMs, 30_000);
    const refused = await cli(["forget", subject, "--yes", "--json", ...t.flags], operatorMs);
    expect(refused.code, refused.err).toBe(1);
    // The guard's default grace (1000 ms) less the 200 ms since the lease ended, plus the millisecond past it.
    expect(refused.err).toContain(
      `the lease of ${key(subject)} ended 200 ms ago by this clock (fence ${fence}: running`,
    );
    expect(refused.err).toContain("a lease holds until 1000 ms after its end (--clock-skew-ms): wait 801 ms");
    expect(refused.err).toContain(`eonce state release ${subject} --fence ${fence}`);
    expect(refused.err).toContain("--force");
    expect(await t.store.read(key(subject))).toMatchObject({ status: "running", fence });

    // A grace of 100 ms (the operator knows the clocks agree that closely) no longer covers it.
    const narrow = await cli(["forget", subject, "--yes", "--clock-skew-ms", "100", ...t.flags], operatorMs);
    expect(narrow.code, narrow.err).toBe(0);
    expect(await t.store.read(key(subject))).toBeUndefined();

    // --force deletes under a lease with minutes left: the operator knows its holder is gone.
    const liveSubject = "photos/forget-force.jpg";
    const liveFence = await claimAt(t.store, liveSubject, 4, 0, 10 * MINUTE);
    const forced = await state("forget", liveSubject, "--yes", "--force", "--json");
    expect(forced.code, forced.err).toBe(0);
    expect(json(forced)).toMatchObject({ forgotten: true, record: { fence: liveFence, lease: "live" } });
    expect(await t.store.read(key(liveSubject))).toBeUndefined();
  });

  it("forget: without --yes says what it would delete (exit 2) and deletes nothing", async () => {
    const r = await state("forget", s.released);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /would delete o#photos\/released\.jpg \(fence \d+: released, position 0+1\); add --yes/,
    );
    expect((await t.store.read(key(s.released)))?.status).toBe("released");
    expect((await state("forget", "photos/none.jpg", "--yes")).code).toBe(1);
  });

  it("forget: a done record is deleted, and the same event runs again", async () => {
    const subject = "photos/forget-done.jpg";
    let runs = 0;
    const handler = async () => ++runs;
    expect((await guard.run(event(subject, 2), handler)).status).toBe("processed");
    expect((await guard.run(event(subject, 2), handler)).status).toBe("duplicate");
    const r = await state("forget", subject, "--yes");
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(
      new RegExp(`^forgot ${key(subject)} \\(fence \\d+: done, position ${p(2)}\\): the next`),
    );
    expect(await guard.run(event(subject, 2), handler)).toMatchObject({ status: "processed", result: 2 });
    expect(runs).toBe(2);
  });

  if (kind.name === "dynamodb-inline") {
    it("forget (inline): removes the state attributes and leaves the user's row", async () => {
      const store = t.store as InlineDynamoDBStore;
      const subject = "photos/inline-row.jpg";
      await guard.run(event(subject, 3), async (ctx) => {
        ctx.atCommit(store.row(ctx, { caption: "a cat" }));
      });
      expect((await state("forget", subject, "--yes")).code).toBe(0);
      const row = await t.userRow?.(subject);
      expect(row?.caption).toEqual({ S: "a cat" });
      expect(Object.keys(row ?? {}).filter((a) => a.startsWith("eo_") && !a.startsWith("eo_w"))).toEqual([]);
      expect(await store.read(key(subject))).toBeUndefined();
    });
  }

  if (kind.name === "postgres-inline") {
    it("forget (inline): clears the state columns, keeps the user's row and its write stamp", async () => {
      const store = t.store as InlinePostgresStore;
      const subject = "photos/inline-row.jpg";
      await guard.run(event(subject, 3), async (ctx) => {
        ctx.atCommit(store.row(ctx, { caption: "a cat" }));
      });
      const before = await t.userRow?.(subject);
      expect(before).toMatchObject({ eo_st: "done", eo_wpos: p(3) });
      expect((await state("forget", subject, "--yes")).code).toBe(0);
      const row = (await t.userRow?.(subject)) ?? {};
      expect(row.caption).toBe("a cat");
      const stateColumns = Object.keys(row).filter((c) => c.startsWith("eo_") && !c.startsWith("eo_w"));
      expect(stateColumns.filter((c) => row[c] !== null)).toEqual([]);
      expect({ wpos: row.eo_wpos, wfence: row.eo_wfence }).toEqual({
        wpos: p(3),
        wfence: before?.eo_wfence,
      });
      expect(await store.read(key(subject))).toBeUndefined();
      // The committed position went with the state, but the stamp still fences the row: an older event runs and
      // commits, and its row write is stale.
      const older = await guard.run(event(subject, 2), async (ctx) => {
        ctx.atCommit(store.row(ctx, { caption: "older" }));
      });
      expect(older).toMatchObject({ status: "processed", writes: [{ status: "stale" }] });
      expect((await t.userRow?.(subject))?.caption).toBe("a cat");
    });

    it("forget (inline): a row without state is not found, and stays as it was", async () => {
      const subject = "photos/no-state.jpg";
      const before = await t.userRow?.(subject);
      expect(before?.caption).toBe("a dog");
      const r = await state("forget", subject, "--yes", "--json");
      expect(r.code).toBe(1);
      expect(json(r)).toEqual({ error: "not-found", key: key(subject) });
      expect(await t.userRow?.(subject)).toEqual(before);
    });

    it("--key-column: state in a table keyed by another column", async () => {
      const db = t.db as TestDatabase;
      await db.pool.query(`CREATE TABLE "${db.schema}"."orders" (id text PRIMARY KEY, caption text)`);
      const options = { pool: db.pool, schema: db.schema, table: "orders", keyColumn: "id" };
      await migrateInline(db.pool, options);
      const subject = "orders/42";
      const processed = await createGuard({ store: new InlinePostgresStore(options) }).run(
        event(subject, 4),
        async () => "shipped",
      );
      expect(processed.status).toBe("processed");
      const orders = postgresFlags(true, db.schema, "orders");
      const got = await cli(["get", subject, "--json", ...orders, "--key-column", "id"]);
      expect(got.code, got.err).toBe(0);
      expect(json(got)).toMatchObject({ key: key(subject), status: "done", position: p(4) });
      const listed = await cli(["list", "--json", ...orders, "--key-column", "id"]);
      expect(json(listed).records.map((v) => v.key)).toEqual([key(subject)]);
      // The default key column, pk, is not in that table.
      const without = await cli(["get", subject, ...orders]);
      expect(without.code).toBe(2);
      expect(without.err).toMatch(/column "pk" does not exist/);
    });
  }

  if (kind.name === "dynamodb-inline" || kind.name === "postgres-inline") {
    it("--row-key: a store's custom row mapping; --row-key-inverse names listed rows, without it list shows rows", async () => {
      // The subject users/03 lives in the row user-03 (test/cli/fixtures/row-key.ts).
      const store = t.withRowKey?.(rowKey) as StateStore;
      const subject = "users/03";
      const done = await createGuard({ store }).run(event(subject, 6), async () => "shipped");
      expect(done.status).toBe("processed");
      const mapping = ["--row-key", `${ROW_KEY}:rowKey`];
      const inverse = ["--row-key-inverse", `${ROW_KEY}:stateKeyOfRow`];

      const got = await state("get", subject, "--json", ...mapping);
      expect(got.code, got.err).toBe(0);
      expect(json(got)).toMatchObject({ key: key(subject), status: "done", position: p(6), subject });

      const ours = (r: CliResult) => json(r).records.filter((v) => JSON.stringify(v).includes("user"));
      const keyed = await state("list", "--json", "--status", "done", ...mapping, ...inverse);
      expect(keyed.code, keyed.err).toBe(0);
      expect(ours(keyed).map((v) => v.key)).toEqual([key(subject)]);

      // No inverse: records are named by their rows, and the listing says so.
      const byRow = await state("list", "--json", "--status", "done", ...mapping);
      expect(byRow.code, byRow.err).toBe(0);
      expect(json(byRow).listedBy).toBe("row");
      expect(ours(byRow)).toMatchObject([{ key: null, row: "user-03", status: "done" }]);
      const table = (await state("list", "--status", "done", ...mapping)).out.trim().split("\n");
      expect(table[0]).toMatch(/ POSITION +ROW$/);
      expect(table.some((line) => / user-03$/.test(line))).toBe(true);
      expect(table.at(-1)).toMatch(/^\(listed by row: --row-key has no --row-key-inverse/);

      // An inverse that is not one would list keys get cannot find: refused.
      const wrong = await state("list", ...mapping, "--row-key-inverse", `${ROW_KEY}:defaultInverse`);
      expect(wrong.code).toBe(2);
      expect(wrong.err).toMatch(/stateKeyOfRow is not rowKey's inverse: row ".+" → key "o#.+" → row ".+"/);

      // release and forget reach the row too.
      const claimed = await claimAt(store, "users/04", 2, 0, 10 * MINUTE);
      const released = await state("release", "users/04", "--fence", String(claimed), ...mapping);
      expect(released.code, released.err).toBe(0);
      expect((await state("forget", subject, "--yes", ...mapping)).code).toBe(0);
      expect(await store.read(key(subject))).toBeUndefined();
    });

    it("--row-key: usage errors exit 2", async () => {
      const bad = await state("get", "users/03", "--row-key", "test/cli/fixtures/none.ts:rowKey");
      expect(bad.code).toBe(2);
      expect(bad.err).toMatch(/--row-key: --row-key module not found: .*none\.ts/);
      const noExport = await state("get", "users/03", "--row-key", `${ROW_KEY}:nope`);
      expect(noExport.code).toBe(2);
      expect(noExport.err).toMatch(/has no function export "nope" \(function exports: rowKey, stateKeyOfRow/);
      const alone = await state("list", "--row-key-inverse", `${ROW_KEY}:stateKeyOfRow`);
      expect(alone.code).toBe(2);
      expect(alone.err).toMatch(/--row-key-inverse is the inverse of --row-key: give --row-key too/);
    });
  }
});

describe("eonce state: usage and connection errors exit 2", () => {
  const sqlite = ["--store", "sqlite", "--file"];
  const dir = mkdtempSync(join(tmpdir(), "eonce-cli-state-"));
  const DB = join(dir, "state.db");
  new SqliteStore({ filename: DB }).close();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ["an unknown store kind", ["list", "--store", "redis"], /argument 'redis' is invalid/],
    [
      "an option of another store",
      ["list", "--table", "t", "--file", "x.db"],
      /--file is not for --store dynamodb/,
    ],
    ["DynamoDB without --table", ["list"], /--store dynamodb needs --table/],
    ["SQLite without --file", ["list", "--store", "sqlite"], /--store sqlite needs --file/],
    [
      "inline PostgreSQL without --table",
      ["list", "--store", "postgres", "--inline"],
      /--store postgres --inline needs --table/,
    ],
    [
      "the deprecated name postgres-inline: the engine with --inline",
      ["list", "--store", "postgres-inline"],
      /--store postgres --inline needs --table/,
    ],
    [
      "--inline on an engine without an inline mode",
      ["list", "--store", "sqlite", "--inline", "--file", "x.db"],
      /--inline is not for --store sqlite \(engines with inline state: dynamodb, postgres\)/,
    ],
    ["an unknown engine", ["list", "--store", "mysql"], /must be one of dynamodb, postgres, sqlite, valkey/],
    [
      "a key column for another store",
      ["list", "--store", "postgres", "--key-column", "id"],
      /--key-column is not for --store postgres/,
    ],
    [
      "a row mapping for a store without rows",
      ["list", "--store", "postgres", "--row-key", "m.ts:rowKey"],
      /--row-key is not for --store postgres/,
    ],
    [
      "a key attribute for inline PostgreSQL",
      ["list", "--store", "postgres", "--inline", "--table", "t", "--key-attribute", "id"],
      /--key-attribute is not for --store postgres --inline/,
    ],
    [
      "a reserved key column",
      ["list", "--store", "postgres", "--inline", "--table", "t", "--key-column", "eo_fence"],
      /keyColumn must be a plain SQL identifier outside the reserved prefix eo_/,
    ],
    [
      "a missing SQLite file",
      ["list", ...sqlite, join(tmpdir(), `none-${randomUUID()}.db`)],
      /no SQLite database/,
    ],
    [
      "a SQLite file without the table",
      ["list", "--store", "sqlite", "--file", DB, "--table", "nope"],
      /no table "nope"/,
    ],
    ["a duration without a unit", ["list", ...sqlite, "x.db", "--older-than", "10"], /expected a duration/],
    ["a bad --limit", ["list", ...sqlite, "x.db", "--limit", "0"], /must be an integer from 1/],
    ["a bad --status", ["list", ...sqlite, "x.db", "--status", "stuck"], /argument 'stuck' is invalid/],
    ["release without --fence", ["release", "a/b", ...sqlite, "x.db"], /fence is required/],
    [
      "a negative --clock-skew-ms",
      ["forget", "a/b", "--yes", ...sqlite, "x.db", "--clock-skew-ms", "-1"],
      /must be a non-negative integer/,
    ],
    [
      "a bad PostgreSQL name",
      ["list", "--store", "postgres", "--table", "a;b"],
      /table must be a plain SQL identifier/,
    ],
  ])("%s", async (_, args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });

  it("a store that cannot be reached", async () => {
    const r = await cli([
      "list",
      "--store",
      "postgres",
      "--database-url",
      "postgres://nobody@127.0.0.1:1/none",
    ]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^eonce state list: PostgreSQL list of .* failed/);
  });

  it("help states the exit codes", async () => {
    const r = await cli(["forget", "--help"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("Exit codes:");
    expect(r.out).toContain("--database-url <url>");
  });
});

describe("eonce state --store postgres: --database-url, else DATABASE_URL, else the PG* variables", () => {
  let db: TestDatabase;
  const url = new URL(POSTGRES_URL);
  const unset = { DATABASE_URL: "", PGHOST: "", PGPORT: "", PGUSER: "", PGDATABASE: "", PGPASSWORD: "" };
  const list = (...args: string[]) =>
    cli(["list", "--json", "--store", "postgres", "--schema", db.schema, ...args]);
  const stub = (env: Record<string, string>) => {
    for (const [name, value] of Object.entries({ ...unset, ...env })) vi.stubEnv(name, value);
  };

  beforeAll(async () => {
    db = await testDatabase("cli_state_url");
    await migrate(db.pool, { schema: db.schema });
    const store = new PostgresStore({ pool: db.pool, schema: db.schema });
    await createGuard({ store }).run(event("a/by-url"), async () => "x");
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    // The suite's own stubs (a DynamoDB Local key pair) again.
    vi.stubEnv("AWS_ACCESS_KEY_ID", "local");
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "local");
    await db?.close();
  });

  it("DATABASE_URL, the variable the README's handlers read", async () => {
    stub({ DATABASE_URL: POSTGRES_URL });
    const r = await list();
    expect(r.code, r.err).toBe(0);
    expect(json(r).records.map((v) => v.key)).toEqual(["o#a/by-url"]);
  });

  it("DATABASE_URL before the PG* variables, which fill only what it leaves out", async () => {
    // A host and port that fail: used only if the PG* variables won over the URL's own.
    stub({ DATABASE_URL: POSTGRES_URL, PGPORT: "1", PGHOST: "nowhere.invalid" });
    const r = await list();
    expect(r.code, r.err).toBe(0);
  });

  it("the PG* variables without DATABASE_URL", async () => {
    stub({
      PGHOST: url.hostname,
      PGPORT: url.port || "5432",
      PGUSER: decodeURIComponent(url.username),
      PGPASSWORD: decodeURIComponent(url.password),
      PGDATABASE: url.pathname.slice(1),
    });
    const r = await list();
    expect(r.code, r.err).toBe(0);
    expect(json(r).records).toHaveLength(1);
  });

  it("--database-url wins over DATABASE_URL", async () => {
    stub({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" });
    const r = await list("--database-url", POSTGRES_URL);
    expect(r.code, r.err).toBe(0);
    expect(json(r).records).toHaveLength(1);
    const refused = await list();
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/PostgreSQL list of .* failed/);
  });
});

describe("eonce state (spawned)", () => {
  it("runs from the command line: list --json on SQLite", async () => {
    const dir = mkdtempSync(join(tmpdir(), "eonce-cli-state-"));
    const filename = join(dir, "state.db");
    const store = new SqliteStore({ filename });
    await createGuard({ store }).run(event("a/b"), async () => "x");
    store.close();
    try {
      const { stdout } = await promisify(execFile)("npx", [
        "tsx",
        "src/cli/main.ts",
        "state",
        "list",
        "--store",
        "sqlite",
        "--file",
        filename,
        "--json",
      ]);
      expect(JSON.parse(stdout)).toMatchObject({ count: 1, records: [{ key: "o#a/b", status: "done" }] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
