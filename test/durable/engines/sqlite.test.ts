import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  OptionsError,
  StoreError,
  TransactionLimitError,
  UnsupportedAtomicWriteError,
} from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  type DispatchedExecution,
  durableExecutionName,
  SqliteStepEffects,
  type SqliteStepEffectsOptions,
  type StepEffectContext,
} from "../../../src/durable/index.js";
import { SqliteFencedSink } from "../../../src/engines/sqlite/sink.js";
import { SqliteStore, statementsOf } from "../../../src/engines/sqlite/store.js";
import { quietLogger, quietMetrics } from "../harness.js";

/**
 * What the contract (contract.test.ts, sqlite.ts) does not cover of SqliteStepEffects: two connections on one file,
 * the marker before the fence, the fence move folded by the store (its own database only), write outcomes, the
 * table and its sweep, options and errors. A lost answer cannot happen: the driver is synchronous, in process.
 */
describe("SqliteStepEffects", () => {
  const dir = mkdtempSync(join(tmpdir(), "eonce-steps-test-"));
  const filename = join(dir, "steps.db");
  let store: SqliteStore;
  let sink: SqliteFencedSink;
  const quiet = { logger: quietLogger(), metrics: quietMetrics() };
  const effectsOn = (options: Partial<SqliteStepEffectsOptions> = {}) =>
    new SqliteStepEffects({ store, ...quiet, ...options });

  beforeAll(() => {
    store = new SqliteStore({ filename });
    statementsOf(store).run(
      "CREATE TABLE counters (pk TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
      {},
    );
    sink = new SqliteFencedSink({ store });
  });
  afterAll(() => {
    store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const execution = (version: number, subject = `o#${randomUUID().slice(0, 12)}`): DispatchedExecution => ({
    executionName: durableExecutionName(subject, `v${version}`),
    subject,
    identity: `v${version}`,
    position: positionFromNumber(version),
  });
  const increment = (on: SqliteStore, ctx: StepEffectContext, row: string) =>
    on.atomicWrite({
      description: `count ${row}`,
      sql: "INSERT INTO counters AS c (pk, n) VALUES (@pk, 1) ON CONFLICT (pk) DO UPDATE SET n = c.n + 1 RETURNING 1 AS ok",
      params: { pk: `${ctx.subject}#${row}` },
    });
  const count = (subject: string, row: string) =>
    Number(
      statementsOf(store).get("SELECT n FROM counters WHERE pk = @pk", { pk: `${subject}#${row}` })?.n ?? 0,
    );

  it("two connections on one file: a step applied through one is a duplicate through the other", async () => {
    const other = new SqliteStore({ filename });
    try {
      const mine = effectsOn();
      const theirs = effectsOn({ store: other });
      const e = execution(1);
      const outcomes = await Promise.all([
        mine.commitStep(e, "charge", (ctx) => {
          ctx.atCommit(increment(store, ctx, "charges"));
          return "mine";
        }),
        theirs.commitStep(e, "charge", (ctx) => {
          ctx.atCommit(increment(other, ctx, "charges"));
          return "theirs";
        }),
      ]);
      expect(outcomes.map((o) => o.status).sort()).toEqual(["duplicate", "processed"]);
      const winner = outcomes.find((o) => o.status === "processed");
      for (const o of outcomes) expect(o.status === "stale" ? "stale" : o.result).toBe(winner?.result);
      expect(count(e.subject, "charges")).toBe(1);
      // The older execution through the other connection is refused once the newer one's step landed here.
      expect((await mine.commitStep(execution(2, e.subject), "next", () => 1)).status).toBe("processed");
      expect((await theirs.commitStep(execution(1, e.subject), "next", () => 1)).status).toBe("stale");
    } finally {
      other.close();
    }
  });

  it("a write that returns no row is stale; the step lands with the others", async () => {
    const effects = effectsOn();
    const e = execution(5);
    await sink.put(
      { position: positionFromNumber(9), fence: 1 },
      { key: `${e.subject}#row`, value: "newer" },
    );
    const out = await effects.commitStep(e, "write", (ctx) => {
      ctx.atCommit(sink.atomicPut(ctx, { key: `${ctx.subject}#row`, value: "v5" }));
      ctx.atCommit(increment(store, ctx, "sent"));
    });
    expect(out.status === "processed" && out.writes.map((w) => w.status)).toEqual(["stale", "applied"]);
    expect((await sink.get(`${e.subject}#row`))?.value).toBe("newer");
  });

  it("refuses another engine's write in a step, naming its own engine (its display name)", async () => {
    const foreign = { engine: "memory", apply: () => {} };
    await expect(
      effectsOn().apply(execution(3), "foreign", (ctx) => ctx.atCommit(foreign as never)),
    ).rejects.toThrow(/folds SQLite writes only, not a memory write/);
  });

  it("the fence move folds into its own store only; another database's write is refused in a step", async () => {
    const effects = effectsOn();
    const newer = execution(2);
    const elsewhere = new SqliteStore({ filename: join(dir, "elsewhere.db") });
    try {
      expect(store.canFold(effects.fenceWrite(newer))).toBe(true);
      expect(elsewhere.canFold(effects.fenceWrite(newer))).toBe(false);
      await expect(
        effects.commitStep(newer, "mixed", (ctx) => ctx.atCommit(increment(elsewhere, ctx, "sent"))),
      ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    } finally {
      elsewhere.close();
    }
  });

  it("more writes than maxWrites: TransactionLimitError, nothing written", async () => {
    const effects = effectsOn();
    const e = execution(1);
    await expect(
      effects.commitStep(e, "big", (ctx) => {
        for (let i = 0; i < 1001; i++) ctx.atCommit(increment(store, ctx, "sent"));
      }),
    ).rejects.toBeInstanceOf(TransactionLimitError);
    expect(await effects.marker(e, "big")).toEqual({ applied: false });
  });

  it("deleteExpired removes expired markers only: the fence stays and keeps refusing older executions", async () => {
    const effects = effectsOn({ markerExpiresAfterSeconds: 1, tableName: "swept_steps" });
    const newer = execution(2);
    await effects.commitStep(newer, "one", () => 1);
    expect(effects.deleteExpired(Math.floor(Date.now() / 1000) + 3600)).toBe(1);
    expect(await effects.marker(newer, "one")).toEqual({ applied: false });
    expect((await effects.commitStep(execution(1, newer.subject), "one", () => 1)).status).toBe("stale");
  });

  it("options: unknown keys, bad names and another store are OptionsErrors; a failing database is a StoreError", async () => {
    expect(() => new SqliteStepEffects({ store, tableNmae: "x" } as never)).toThrow(OptionsError);
    expect(() => new SqliteStepEffects({ store, tableName: 'x"; DROP' })).toThrow(OptionsError);
    expect(() => new SqliteStepEffects({ store: {} } as never)).toThrow(OptionsError);
    const closed = new SqliteStore({ filename: join(dir, "closed.db") });
    const effects = effectsOn({ store: closed });
    closed.close();
    await expect(effects.commitStep(execution(1), "one", () => 1)).rejects.toBeInstanceOf(StoreError);
    await expect(effects.stop(execution(1))).rejects.toBeInstanceOf(StoreError);
    await expect(effects.marker(execution(1), "one")).rejects.toBeInstanceOf(StoreError);
  });
});
