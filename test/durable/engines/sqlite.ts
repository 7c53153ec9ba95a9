import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresWrite } from "../../../src/engines/postgres/atomic-write.js";
import { SqliteStepEffects } from "../../../src/engines/sqlite/index.js";
import { SqliteFencedSink } from "../../../src/engines/sqlite/sink.js";
import { SqliteStore, statementsOf } from "../../../src/engines/sqlite/store.js";
import { quietLogger, quietMetrics } from "../harness.js";
import type { StepEngineUnderTest } from "./under-test.js";

/** SQLite: a database file per suite in a temporary directory, with the counters and fenced sink tables. */
export const stepsUnderTest: StepEngineUnderTest = {
  name: "sqlite",
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "eonce-steps-"));
    const store = new SqliteStore({ filename: join(dir, "steps.db") });
    const db = statementsOf(store);
    db.run("CREATE TABLE counters (pk TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID", {});
    const sink = new SqliteFencedSink({ store });
    const key = (subject: string, row: string) => `${subject}#${row}`;
    return {
      effects: new SqliteStepEffects({ store, logger: quietLogger(), metrics: quietMetrics() }),
      store,
      increment: (ctx, row) =>
        store.atomicWrite({
          description: `count ${row}`,
          sql: "INSERT INTO counters AS c (pk, n) VALUES (@pk, 1) ON CONFLICT (pk) DO UPDATE SET n = c.n + 1 RETURNING 1 AS ok",
          params: { pk: key(ctx.subject, row) },
        }),
      count: async (subject, row) =>
        Number(db.get("SELECT n FROM counters WHERE pk = @pk", { pk: key(subject, row) })?.n ?? 0),
      fencedPut: (ctx, row, value) => sink.atomicPut(ctx, { key: key(ctx.subject, row), value }),
      value: async (subject, row) => (await sink.get(key(subject, row)))?.value as string | undefined,
      foreignWrite: () => postgresWrite("SELECT 1"),
      async close() {
        store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
