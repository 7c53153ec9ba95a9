import { postgresWrite } from "../../../src/engines/postgres/atomic-write.js";
import { createPostgresStepEffectsTable, PostgresStepEffects } from "../../../src/engines/postgres/index.js";
import type { PostgresPool } from "../../../src/engines/postgres/pool.js";
import { migrate } from "../../../src/engines/postgres/schema.js";
import { PostgresFencedSink } from "../../../src/engines/postgres/sink.js";
import { PostgresStore } from "../../../src/engines/postgres/store.js";
import { createSinkTable, testDatabase } from "../../kit/postgres.js";
import { quietLogger, quietMetrics } from "../harness.js";
import type { StepEngineUnderTest } from "./under-test.js";

/** PostgreSQL (the run's server, test/kit/postgres.ts): a schema per suite with the step, state, counters and sink tables. */
export const stepsUnderTest: StepEngineUnderTest = {
  name: "postgres",
  async open() {
    const db = await testDatabase("steps");
    await migrate(db.pool, { schema: db.schema });
    await createPostgresStepEffectsTable(db.pool, { schema: db.schema });
    await createSinkTable(db.pool, db.schema, "sink");
    const counters = `"${db.schema}"."counters"`;
    await db.pool.query(`CREATE TABLE ${counters} (pk text PRIMARY KEY, n bigint NOT NULL)`);
    // Requests: transactions (one pooled client each) and statements run on the pool itself.
    let requests = 0;
    const counting: PostgresPool = {
      query: ((sql: string, params?: unknown[]) => {
        requests++;
        return db.pool.query(sql, params);
      }) as PostgresPool["query"],
      connect: () => {
        requests++;
        return db.pool.connect();
      },
    };
    const sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
    const key = (subject: string, row: string) => `${subject}#${row}`;
    return {
      effects: new PostgresStepEffects({
        pool: counting,
        schema: db.schema,
        logger: quietLogger(),
        metrics: quietMetrics(),
      }),
      store: new PostgresStore({ pool: db.pool, schema: db.schema }),
      increment: (ctx, row) =>
        postgresWrite(
          `INSERT INTO ${counters} AS c (pk, n) VALUES ($1, 1) ON CONFLICT (pk) DO UPDATE SET n = c.n + 1`,
          [key(ctx.subject, row)],
          `count ${row}`,
        ),
      count: async (subject, row) =>
        Number(
          (await db.pool.query(`SELECT n FROM ${counters} WHERE pk = $1`, [key(subject, row)])).rows[0]?.n ??
            0,
        ),
      fencedPut: (ctx, row, value) => sink.atomicUpsert(ctx, { pk: key(ctx.subject, row), value }),
      value: async (subject, row) => (await sink.get(key(subject, row)))?.value as string | undefined,
      foreignWrite: () => ({ engine: "sqlite", description: "a SQLite write" }),
      requests: () => requests,
      close: () => db.close(),
    };
  },
};
