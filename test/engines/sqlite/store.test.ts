import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError, UnsupportedAtomicWriteError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import type { ClaimRequest } from "../../../src/core/state.js";
import { SqliteFencedSink, SqliteStore } from "../../../src/engines/sqlite/index.js";
import { statementsOf } from "../../../src/engines/sqlite/store.js";
import { millisecondApartClock } from "../../kit/index.js";

/** What the contract suite cannot see: the engine's settings, its errors, and writers in several processes. */

const dir = mkdtempSync(join(tmpdir(), "eonce-sqlite-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = () => join(dir, `${randomUUID()}.db`);

/** Everything a child prints, once it exits 0. */
function output(child: ChildProcess): Promise<string> {
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d;
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d;
  });
  return new Promise((resolve, reject) =>
    // "close", not "exit": the claimer's answer on stdout is read in full only once the pipes are drained.
    child.on("close", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`claimer exited ${code}: ${err}`)),
    ),
  );
}

function request(key: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  const nowMs = Date.now();
  return {
    key,
    position: positionFromNumber(1),
    identity: "e1",
    nowMs,
    leaseUntilMs: nowMs + 10_000,
    expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
    supersede: false,
    fence: nowMs * 1000,
    token: randomUUID(),
    leaseGraceMs: 0,
    ...overrides,
  };
}

describe("SqliteStore: opening and options", () => {
  it("opens in WAL mode and creates its one table, keeping it on the next open", () => {
    const filename = file();
    const store = new SqliteStore({ filename, busyTimeoutMs: 1234, synchronous: "normal" });
    const raw = new Database(filename);
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    expect(tables).toEqual([{ name: "eonce_state" }]);
    raw.close();
    store.close();
    // Opening again keeps the table and its rows (CREATE TABLE IF NOT EXISTS).
    new SqliteStore({ filename }).close();
  });

  it("rejects bad options with OptionsError", () => {
    const filename = file();
    expect(() => new SqliteStore({ filename, tableName: "state; DROP TABLE x" })).toThrow(OptionsError);
    expect(() => new SqliteStore({ filename, busyTimeoutMs: -1 })).toThrow(OptionsError);
    expect(() => new SqliteStore({ filename, synchronous: "off" as "full" })).toThrow(OptionsError);
    expect(() => new SqliteStore({ filename, maxResultBytes: 0 })).toThrow(OptionsError);
    expect(() => new SqliteStore({ filename, busyTimeout: 5 } as never)).toThrow(OptionsError);
    expect(() => new SqliteStore({} as never)).toThrow(OptionsError);
    expect(() => new SqliteFencedSink({ store: {} as SqliteStore })).toThrow(OptionsError);
  });
});

describe("SqliteStore: errors", () => {
  it("a write lock held past the busy timeout is a retryable StoreError; nothing landed", async () => {
    const filename = file();
    const store = new SqliteStore({ filename, busyTimeoutMs: 0 });
    const other = new Database(filename);
    other.exec("BEGIN IMMEDIATE");
    const req = request("o#busy");
    const error = await store.claim(req).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(true);
    other.exec("ROLLBACK");
    expect(await store.read("o#busy")).toBeUndefined();
    expect((await store.claim(req)).claimed).toBe(true);
    other.close();
    store.close();
  });

  it("any other engine error is a StoreError that is not retryable", async () => {
    const filename = file();
    const store = new SqliteStore({ filename });
    const other = new Database(filename);
    other.exec("DROP TABLE eonce_state");
    const error = await store.claim(request("o#gone")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(false);
    other.close();
    store.close();
  });
});

describe("SqliteStore: effects in the commit", () => {
  it("folds only its own database's writes", async () => {
    const a = new SqliteStore({ filename: file() });
    const b = new SqliteStore({ filename: file() });
    const req = request("o#fold");
    const foreign = new SqliteFencedSink({ store: b }).atomicPut(req, { key: "k", value: 1 });
    expect(a.canFold(foreign)).toBe(false);
    expect(b.canFold(foreign)).toBe(true);
    expect(a.canFold({ engine: "memory", description: "x" })).toBe(false);
    await a.claim(req);
    await expect(
      a.commit({ key: req.key, fence: req.fence, identity: "e1", expiresAtSeconds: 1, writes: [foreign] }),
    ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    expect((await a.read(req.key))?.status).toBe("running");
    a.close();
    b.close();
  });

  it("a refused effect is reported stale and the commit lands; the fenced sink works on its own", async () => {
    const store = new SqliteStore({ filename: file() });
    const sink = new SqliteFencedSink({ store });
    expect(await sink.put({ position: positionFromNumber(9), fence: 5 }, { key: "r", value: { v: 9 } })).toBe(
      "applied",
    );
    expect(await sink.put({ position: positionFromNumber(9), fence: 4 }, { key: "r", value: "old" })).toBe(
      "stale",
    );
    const req = request("o#stale");
    await store.claim(req);
    const write = sink.atomicPut(req, { key: "r", value: "one" });
    const out = await store.commit({
      key: req.key,
      fence: req.fence,
      identity: "e1",
      expiresAtSeconds: 1,
      writes: [write],
    });
    expect(out).toEqual({ committed: true, writes: [{ description: "put eonce_sink/r", status: "stale" }] });
    expect(await sink.get("r")).toEqual({ value: { v: 9 }, srcPos: positionFromNumber(9), srcFence: 5 });
    expect((await store.read(req.key))?.status).toBe("done");
    store.close();
  });
});

describe("SqliteStore: expiry and several processes", () => {
  it("statements per outcome: new run 2 transactions, apply 1, duplicate 1, stale 1, failed 2", async () => {
    const store = new SqliteStore({ filename: file() });
    const statements = statementsOf(store);
    const count = { transactions: 0, statements: 0 };
    const immediate = statements.immediate.bind(statements);
    const get = statements.get.bind(statements);
    const run = statements.run.bind(statements);
    statements.immediate = <T>(body: () => T): T => {
      count.transactions++;
      return immediate(body);
    };
    statements.get = (sql, params) => {
      count.statements++;
      return get(sql, params);
    };
    statements.run = (sql, params) => {
      count.statements++;
      return run(sql, params);
    };
    const measure = async (work: () => Promise<unknown>) => {
      count.transactions = 0;
      count.statements = 0;
      await work();
      return { ...count };
    };
    const guard = createGuard({ store, leaseMs: 5000, clock: millisecondApartClock() });
    const s = `bucket/${randomUUID()}`;
    const p = positionFromNumber;
    const ev = (n: number) => ({ subject: s, identity: `e${n}`, position: p(n) });
    expect(await measure(() => guard.run(ev(2), async () => "ok"))).toEqual({
      transactions: 2,
      statements: 3,
    });
    expect(await measure(() => guard.run(ev(2), async () => "again"))).toEqual({
      transactions: 1,
      statements: 2,
    });
    expect(await measure(() => guard.run(ev(1), async () => "old"))).toEqual({
      transactions: 1,
      statements: 2,
    });
    expect(await measure(() => guard.apply(ev(3), () => "applied"))).toEqual({
      transactions: 1,
      statements: 1,
    });
    const failing = measure(() =>
      guard.run(ev(4), async () => {
        throw new Error("boom");
      }),
    );
    expect(await failing).toEqual({ transactions: 2, statements: 3 });
    store.close();
  });

  it("deleteExpired removes the rows whose expiry has passed, as TTL would", async () => {
    const store = new SqliteStore({ filename: file() });
    await store.claim(request("o#old", { expiresAtSeconds: 100 }));
    await store.claim(request("o#new", { expiresAtSeconds: 300 }));
    expect(store.deleteExpired(200)).toBe(1);
    expect(await store.read("o#old")).toBeUndefined();
    expect(await store.read("o#new")).toBeDefined();
    store.close();
  });

  it("four processes claim the same subjects at once on one file: exactly one wins each", async () => {
    const filename = file();
    new SqliteStore({ filename }).close(); // the table exists before they race
    const subjects = 300;
    const claimer = fileURLToPath(new URL("./claimer.ts", import.meta.url));
    const children = [1, 2, 3, 4].map((w) =>
      spawn(process.execPath, ["--import", "tsx", claimer, filename, String(w), String(subjects)]),
    );
    const outputs = children.map((c) => output(c));
    // Every child has opened the store before any claims: they start together.
    await Promise.all(children.map((c) => once(c.stdout, "data")));
    for (const c of children) c.stdin.write("go\n");
    const results = (await Promise.all(outputs)).map(
      (o) =>
        JSON.parse(o.split("\n").filter(Boolean).at(-1) ?? "") as {
          won: number[];
          refused: Record<string, number>;
          startedAt: number;
          endedAt: number;
        },
    );
    const wins = results.flatMap((r) => r.won).sort((x, y) => x - y);
    expect(wins).toEqual(Array.from({ length: subjects }, (_, i) => i));
    // The losers saw the winner's live claim (or a fence above theirs), never a claimable row.
    for (const r of results)
      expect(Object.keys(r.refused).every((k) => k === "in-flight" || k === "fence")).toBe(true);
    // They really raced: all were claiming at once (which wins is up to the lock; SQLite does not queue waiters
    // fairly, so on a loaded machine one process may win them all).
    expect(Math.max(...results.map((r) => r.startedAt))).toBeLessThan(
      Math.min(...results.map((r) => r.endedAt)),
    );
    expect(results.reduce((n, r) => n + Object.values(r.refused).reduce((a, b) => a + b, 0), 0)).toBe(
      3 * subjects,
    );
  }, 60_000);

  it("processes opening a database made before a column was added at once: each opens, the column is added once", async () => {
    const filename = file();
    const old = new Database(filename);
    old.pragma("journal_mode = WAL");
    // The state table as the first release created it: no cfp column.
    old.exec(`CREATE TABLE eonce_state (state_key TEXT PRIMARY KEY, status TEXT NOT NULL, pos TEXT NOT NULL,
      eid TEXT NOT NULL, fence INTEGER NOT NULL, tok TEXT, lease_until INTEGER, cpos TEXT, ceid TEXT, result TEXT,
      result_omitted INTEGER, expires_at INTEGER NOT NULL, att INTEGER) WITHOUT ROWID`);
    // Holding the write lock, so that every opener has seen the column missing before any can add it.
    old.exec("BEGIN IMMEDIATE");
    const opener = fileURLToPath(new URL("./opener.ts", import.meta.url));
    const children = [1, 2, 3, 4].map(() => spawn(process.execPath, ["--import", "tsx", opener, filename]));
    const outputs = children.map((c) => output(c));
    await Promise.all(children.map((c) => once(c.stdout, "data")));
    await new Promise((resolve) => setTimeout(resolve, 500));
    old.exec("ROLLBACK");
    const said = (await Promise.all(outputs)).map((o) => o.trim().split("\n").at(-1));
    old.close();
    expect(said).toEqual(["ok", "ok", "ok", "ok"]);
    const raw = new Database(filename);
    const columns = raw.prepare("SELECT name FROM pragma_table_info('eonce_state')").all() as {
      name: string;
    }[];
    raw.close();
    expect(columns.filter((c) => c.name === "cfp")).toHaveLength(1);
  }, 60_000);

  it("opening a database that lacks nothing takes no write lock: another connection's long write does not hold it up", () => {
    const filename = file();
    new SqliteStore({ filename }).close();
    const writer = new Database(filename);
    writer.exec("BEGIN IMMEDIATE");
    const started = Date.now();
    new SqliteStore({ filename, busyTimeoutMs: 5000 }).close();
    expect(Date.now() - started).toBeLessThan(1000);
    writer.exec("ROLLBACK");
    writer.close();
  });
});
