import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError, TransactionLimitError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  createPostgresStepEffectsTable,
  type DispatchedExecution,
  durableExecutionName,
  durableSqsDispatcher,
  PostgresStepEffects,
  type PostgresStepEffectsOptions,
  type StepEffectContext,
  StepEffectsNotReadyError,
} from "../../../src/durable/index.js";
import { type PostgresAtomicWrite, postgresWrite } from "../../../src/engines/postgres/atomic-write.js";
import { migrate } from "../../../src/engines/postgres/schema.js";
import { PostgresFencedSink } from "../../../src/engines/postgres/sink.js";
import { PostgresStore } from "../../../src/engines/postgres/store.js";
import { lambdaContext } from "../../kit/context.js";
import { s3Notification, s3Record, sqsEvent, sqsRecord } from "../../kit/events.js";
import { createSinkTable, losingPool, type TestDatabase, testDatabase } from "../../kit/postgres.js";
import { FakeDurableLambda } from "../fake-lambda.js";
import { errorCollectingLogger, quietLogger, quietMetrics } from "../harness.js";

/**
 * What the contract (contract.test.ts, postgres.ts) does not cover of PostgresStepEffects: steps that overlap in
 * time on separate connections (forced with pg_sleep), a lost COMMIT answer, the marker before the fence, the fence
 * move folded by the store, write outcomes, the table and its sweep, options and errors. A schema of its own.
 */
describe("PostgresStepEffects", () => {
  let db: TestDatabase;
  let counters: string;
  let sink: PostgresFencedSink;
  const quiet = { logger: quietLogger(), metrics: quietMetrics() };
  const effectsOn = (options: Partial<PostgresStepEffectsOptions> = {}) =>
    new PostgresStepEffects({ pool: db.pool, schema: db.schema, ...quiet, ...options });

  beforeAll(async () => {
    db = await testDatabase("steps");
    await migrate(db.pool, { schema: db.schema });
    await createPostgresStepEffectsTable(db.pool, { schema: db.schema });
    await createSinkTable(db.pool, db.schema, "sink");
    counters = `"${db.schema}"."counters"`;
    await db.pool.query(`CREATE TABLE ${counters} (pk text PRIMARY KEY, n bigint NOT NULL)`);
    sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
  });
  afterAll(async () => db?.close());

  const execution = (version: number, subject = `o#${randomUUID().slice(0, 12)}`): DispatchedExecution => ({
    executionName: durableExecutionName(subject, `v${version}`),
    subject,
    identity: `v${version}`,
    position: positionFromNumber(version),
  });
  const increment = (ctx: StepEffectContext, row: string) =>
    postgresWrite(
      `INSERT INTO ${counters} AS c (pk, n) VALUES ($1, 1) ON CONFLICT (pk) DO UPDATE SET n = c.n + 1`,
      [`${ctx.subject}#${row}`],
      `count ${row}`,
    );
  const count = async (subject: string, row: string) =>
    Number(
      (await db.pool.query(`SELECT n FROM ${counters} WHERE pk = $1`, [`${subject}#${row}`])).rows[0]?.n ?? 0,
    );
  /** A write that holds the step's transaction open (and its marker and fence locks) for `ms`. */
  const hold = (ms: number) => postgresWrite("SELECT pg_sleep($1)", [ms / 1000], `hold ${ms} ms`);
  const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("five applications of one step overlapping on five connections: the others wait on the marker, then duplicate", async () => {
    const effects = effectsOn();
    const e = execution(1);
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        effects.commitStep(e, "charge", (ctx) => {
          ctx.atCommit(increment(ctx, "charges"));
          ctx.atCommit(hold(150));
          return i;
        }),
      ),
    );
    const winner = outcomes.find((o) => o.status === "processed");
    const statuses = JSON.stringify(outcomes.map((o) => o.status));
    expect(
      outcomes.filter((o) => o.status === "processed"),
      statuses,
    ).toHaveLength(1);
    // The others wait on the marker and replay it; one that starts on a loaded machine only after the winner's
    // commit moved the fence may find the step stale instead: never a second application either way.
    expect(
      outcomes.filter((o) => o.status === "duplicate" || o.status === "stale"),
      statuses,
    ).toHaveLength(4);
    for (const o of outcomes)
      if (o.status !== "stale")
        expect(o.status === "processed" || o.status === "duplicate" ? o.result : o).toBe(winner?.result);
    expect(await count(e.subject, "charges")).toBe(1);
  });

  it("two executions racing on the fence: the newer one's step, holding the fence, refuses the older one's", async () => {
    const effects = effectsOn();
    const newer = execution(2);
    const older = execution(1, newer.subject);
    const add = (ms: number) => (ctx: StepEffectContext<PostgresAtomicWrite>) => {
      ctx.atCommit(increment(ctx, "sent"));
      ctx.atCommit(sink.atomicUpsert(ctx, { pk: `${ctx.subject}#latest`, value: ctx.identity }));
      if (ms > 0) ctx.atCommit(hold(ms));
    };
    const first = effects.commitStep(newer, "notify", add(300));
    await delay(100); // newer holds the fence row, uncommitted
    const late = await effects.commitStep(older, "notify", add(0)); // waits for it, then decides on its version
    expect(late).toMatchObject({ status: "stale", current: { executionName: newer.executionName } });
    expect((await first).status).toBe("processed");
    expect(await count(newer.subject, "sent")).toBe(1);
    expect((await sink.get(`${newer.subject}#latest`))?.value).toBe("v2");

    // The other way round: the older one holds the fence; the newer one waits, then moves it on.
    const s2 = execution(1);
    const n2 = execution(2, s2.subject);
    const held = effects.commitStep(s2, "notify", add(300));
    await delay(100);
    expect((await effects.commitStep(n2, "notify", add(0))).status).toBe("processed");
    expect((await held).status).toBe("processed");
    expect(await count(s2.subject, "sent")).toBe(2);
    expect((await sink.get(`${s2.subject}#latest`))?.value).toBe("v2");
  });

  it("many steps of two executions at once: the newer one's all land, the fenced row ends at the newer", async () => {
    const effects = effectsOn();
    const newer = execution(2);
    const older = execution(1, newer.subject);
    const steps = ["a", "b", "c", "d"];
    const outcomes = await Promise.all(
      [older, newer].flatMap((e) =>
        steps.map(async (step) => ({
          e,
          outcome: await effects.commitStep(e, step, (ctx) => {
            ctx.atCommit(increment(ctx, "sent"));
            ctx.atCommit(sink.atomicUpsert(ctx, { pk: `${ctx.subject}#latest`, value: ctx.identity }));
          }),
        })),
      ),
    );
    expect(outcomes.filter((o) => o.e === newer).map((o) => o.outcome.status)).toEqual(
      steps.map(() => "processed"),
    );
    const landed = outcomes.filter((o) => o.outcome.status === "processed").length;
    expect(await count(newer.subject, "sent")).toBe(landed);
    expect((await sink.get(`${newer.subject}#latest`))?.value).toBe("v2");
  });

  it("a lost COMMIT answer: the step runs its transaction again and finds its own marker (processed, writes unknown)", async () => {
    const losing = losingPool(db.pool);
    const effects = effectsOn({ pool: losing.pool });
    const e = execution(1);
    const step = () => effects.commitStep(e, "charge", (ctx) => ctx.atCommit(increment(ctx, "charges")));
    losing.lose(1);
    expect(await step()).toEqual({
      status: "processed",
      result: undefined,
      writes: [{ description: "count charges", status: "unknown" }],
    });
    expect(await count(e.subject, "charges")).toBe(1);
    expect((await step()).status).toBe("duplicate");

    // A stop whose answer is lost: sent again, it finds its own stop (the stopped mark is allowed to stop again).
    losing.lose(1);
    const error = await effects.stop(e).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(true);
    expect(await effects.stop(e)).toBe("stopped");
    expect((await effects.commitStep(e, "refund", () => 1)).status).toBe("stale");
  });

  it("a write that changes no row is stale; the step lands with the others", async () => {
    const effects = effectsOn();
    const e = execution(5);
    const put = (ctx: StepEffectContext<PostgresAtomicWrite>, value: string) =>
      sink.atomicUpsert(ctx, { pk: `${ctx.subject}#row`, value });
    await sink.put({ position: positionFromNumber(9), fence: 1 }, { pk: `${e.subject}#row`, value: "newer" });
    const out = await effects.commitStep(e, "write", (ctx) => {
      ctx.atCommit(put(ctx, "v5"));
      ctx.atCommit(increment(ctx, "sent"));
    });
    expect(out.status === "processed" && out.writes.map((w) => w.status)).toEqual(["stale", "applied"]);
    expect((await sink.get(`${e.subject}#row`))?.value).toBe("newer");
    expect(await effects.marker(e, "write")).toEqual({ applied: true });
  });

  it("stop races a step holding the fence: the stop waits and lands, the execution's later steps are refused", async () => {
    const effects = effectsOn();
    const e = execution(3);
    const running = effects.commitStep(e, "first", (ctx) => ctx.atCommit(hold(200)));
    await delay(50);
    expect(await effects.stop(e)).toBe("stopped");
    expect((await running).status).toBe("processed");
    expect((await effects.commitStep(e, "second", () => 2)).status).toBe("stale");
  });

  it("more writes than maxWrites: TransactionLimitError, nothing written", async () => {
    const effects = effectsOn();
    const e = execution(1);
    await expect(
      effects.commitStep(e, "big", (ctx) => {
        for (let i = 0; i < 1001; i++) ctx.atCommit(increment(ctx, "sent"));
      }),
    ).rejects.toBeInstanceOf(TransactionLimitError);
    expect(await effects.marker(e, "big")).toEqual({ applied: false });
  });

  it("deleteExpired removes expired markers only: the fence stays and keeps refusing older executions", async () => {
    const effects = effectsOn({ markerExpiresAfterSeconds: 1 });
    const newer = execution(2);
    await effects.commitStep(newer, "one", () => 1);
    const removed = await effects.deleteExpired(Math.floor(Date.now() / 1000) + 3600);
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await effects.marker(newer, "one")).toEqual({ applied: false });
    expect((await effects.commitStep(execution(1, newer.subject), "one", () => 1)).status).toBe("stale");
  });

  it("createPostgresStepEffectsTable: concurrent calls on a new schema create it once; again, nothing to do", async () => {
    const schema = `${db.schema}_t`;
    try {
      await Promise.all(
        [1, 2, 3].map(() => createPostgresStepEffectsTable(db.pool, { schema, tableName: "steps" })),
      );
      await createPostgresStepEffectsTable(db.pool, { schema, tableName: "steps" });
      const effects = effectsOn({ schema, tableName: "steps" });
      expect(effects.tableName).toBe(`"${schema}"."steps"`);
      expect((await effects.commitStep(execution(1), "one", () => 1)).status).toBe("processed");
    } finally {
      await db.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it("options: unknown keys and bad names are OptionsErrors; a missing table is a StoreError not worth retrying", async () => {
    expect(() => new PostgresStepEffects({ pool: db.pool, tableNmae: "x" } as never)).toThrow(OptionsError);
    expect(() => new PostgresStepEffects({ pool: db.pool, tableName: 'x"; DROP' })).toThrow(OptionsError);
    expect(() => new PostgresStepEffects({} as never)).toThrow(OptionsError);
    await expect(createPostgresStepEffectsTable(db.pool, { table: "x" } as never)).rejects.toBeInstanceOf(
      OptionsError,
    );
    const missing = effectsOn({ tableName: "no_such_table" });
    const error = await missing.commitStep(execution(1), "one", () => 1).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(false);
    await expect(missing.stop(execution(1))).rejects.toBeInstanceOf(StoreError);
    await expect(missing.marker(execution(1), "one")).rejects.toBeInstanceOf(StoreError);
  });

  it("a dispatcher whose step effects' table is missing: refused before the Invoke, naming the call to make", async () => {
    const lambda = new FakeDurableLambda();
    const errors: unknown[] = [];
    const effects = effectsOn({ tableName: "missing_steps" });
    const handler = durableSqsDispatcher({
      store: new PostgresStore({ pool: db.pool, schema: db.schema }),
      stepEffects: effects,
      lambda,
      functionName: "orders:live",
      logger: errorCollectingLogger(errors),
      metrics: quietMetrics(),
    });
    const message = sqsRecord(s3Notification(s3Record({ key: "a.json", sequencer: "0A" })));
    const answer = await handler(sqsEvent(message), lambdaContext());
    expect(answer.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
    expect(lambda.invokes).toBe(0);
    expect(JSON.stringify(errors)).toContain("StepEffectsNotReadyError");
    const error = await effects.ready().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StepEffectsNotReadyError);
    expect((error as Error).message).toContain(
      `the table "${db.schema}"."missing_steps" does not exist: call createPostgresStepEffectsTable(pool, { schema, tableName })`,
    );
    // Created afterwards: the next delivery finds it, starts the execution and commits.
    await createPostgresStepEffectsTable(db.pool, { schema: db.schema, tableName: "missing_steps" });
    const retried = await handler(sqsEvent(message), lambdaContext());
    expect(retried.batchItemFailures).toEqual([]);
    expect(lambda.started).toHaveLength(1);
  });
});
