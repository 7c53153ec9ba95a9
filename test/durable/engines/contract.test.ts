import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, UnsupportedAtomicWriteError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  type DispatchedExecution,
  type DispatchedPayload,
  durableExecutionName,
  durableSqsDispatcher,
  type StepEffectOutcome,
} from "../../../src/durable/index.js";
import { lambdaContext } from "../../kit/context.js";
import { sqsEvent, sqsRecord } from "../../kit/events.js";
import { FakeDurableLambda } from "../fake-lambda.js";
import { quietLogger, quietMetrics } from "../harness.js";
import { STEP_ENGINES } from "./engines.js";
import type { StepEngineEnv } from "./under-test.js";

/** The execution the dispatcher would start for version `version` of `subject` (null: an event without position). */
function execution(subject: string, version: number | null, identity = `v${version}`): DispatchedExecution {
  return {
    executionName: durableExecutionName(subject, identity),
    subject,
    identity,
    position: version === null ? null : positionFromNumber(version),
  };
}

const statusOf = (o: StepEffectOutcome<unknown>) => o.status;

describe.each(STEP_ENGINES)("guarded steps contract: $name", (engine) => {
  let env: StepEngineEnv;
  beforeAll(async () => {
    env = await engine.open();
  });
  afterAll(async () => {
    await env?.close();
  });
  const subject = () => `o#${randomUUID().slice(0, 12)}`;

  it("applies a step once: a rerun gets the stored result, the sink counts 1", async () => {
    const s = subject();
    const e = execution(s, 1);
    let runs = 0;
    const step = () =>
      env.effects.commitStep(e, "charge", (ctx) => {
        runs++;
        ctx.atCommit(env.increment(ctx, "charges"));
        return { receipt: `r-${runs}` };
      });
    const first = await step();
    expect(first).toMatchObject({ status: "processed", result: { receipt: "r-1" } });
    expect(first.status === "processed" && first.writes).toEqual([
      expect.objectContaining({ status: "applied" }),
    ]);
    const again = await step();
    expect(again).toEqual({ status: "duplicate", result: { receipt: "r-1" } });
    expect(runs).toBe(2); // the function runs again; its writes do not
    expect(await env.count(s, "charges")).toBe(1);
    expect(await env.effects.marker(e, "charge")).toEqual({ applied: true, result: { receipt: "r-1" } });
    expect(await env.effects.marker(e, "other")).toEqual({ applied: false });
  });

  it("applies once when the same step runs five times at once", async () => {
    const s = subject();
    const e = execution(s, 1);
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        env.effects.commitStep(e, "charge", (ctx) => {
          ctx.atCommit(env.increment(ctx, "charges"));
          return i;
        }),
      ),
    );
    expect(outcomes.map(statusOf).sort()).toEqual([
      "duplicate",
      "duplicate",
      "duplicate",
      "duplicate",
      "processed",
    ]);
    const winner = outcomes.find((o) => o.status === "processed");
    for (const o of outcomes) expect(o.status === "stale" ? undefined : o.result).toBe(winner?.result);
    expect(await env.count(s, "charges")).toBe(1);
  });

  it("refuses an older execution's step once a newer one's landed: nothing written, the holder named", async () => {
    const s = subject();
    const older = execution(s, 1);
    const newer = execution(s, 2);
    const add = (ctx: Parameters<Parameters<typeof env.effects.commitStep>[2]>[0]) => {
      ctx.atCommit(env.increment(ctx, "sent"));
      ctx.atCommit(env.fencedPut(ctx, "latest", ctx.identity));
    };
    expect((await env.effects.commitStep(newer, "notify", add)).status).toBe("processed");
    const refused = await env.effects.commitStep(older, "notify", add);
    expect(refused).toEqual({
      status: "stale",
      current: { position: newer.position, executionName: newer.executionName, stopped: false },
    });
    expect(await env.count(s, "sent")).toBe(1);
    expect(await env.value(s, "latest")).toBe("v2");
    // Newer after older is the normal case: both land; so do later steps of the newest execution.
    const s2 = subject();
    for (const v of [1, 2])
      expect((await env.effects.commitStep(execution(s2, v), "notify", add)).status).toBe("processed");
    expect((await env.effects.commitStep(execution(s2, 2), "archive", add)).status).toBe("processed");
    expect(await env.count(s2, "sent")).toBe(3);
    expect(await env.value(s2, "latest")).toBe("v2");
  });

  it("checks the marker before the fence: a step applied before is a duplicate after a newer execution or a stop", async () => {
    const s = subject();
    const older = execution(s, 1);
    const newer = execution(s, 2);
    const add = (ctx: Parameters<Parameters<typeof env.effects.commitStep>[2]>[0]) => {
      ctx.atCommit(env.increment(ctx, "count"));
      return ctx.identity;
    };
    expect((await env.effects.commitStep(older, "a", add)).status).toBe("processed");
    expect((await env.effects.commitStep(newer, "a", add)).status).toBe("processed");
    expect(await env.effects.commitStep(older, "a", add)).toEqual({ status: "duplicate", result: "v1" });
    expect(await env.effects.stop(newer)).toBe("stopped");
    expect(await env.effects.commitStep(newer, "a", add)).toEqual({ status: "duplicate", result: "v2" });
    expect((await env.effects.commitStep(newer, "b", add)).status).toBe("stale");
    expect(await env.count(s, "count")).toBe(2);
  });

  it("a refused fence leaves no marker: the step is not marked applied, nothing written", async () => {
    const s = subject();
    const newer = execution(s, 2);
    const older = execution(s, 1);
    await env.effects.commitStep(newer, "one", () => 1);
    const refused = await env.effects.commitStep(older, "two", (ctx) =>
      ctx.atCommit(env.increment(ctx, "sent")),
    );
    expect(refused.status).toBe("stale");
    expect(await env.effects.marker(older, "two")).toEqual({ applied: false });
    expect(await env.count(s, "sent")).toBe(0);
  });

  it("keeps events without a position apart: each has its own fence", async () => {
    const s = subject();
    for (const id of ["a", "b", "a"]) {
      await env.effects.commitStep(execution(s, null, id), "notify", (ctx) => {
        ctx.atCommit(env.increment(ctx, "sent"));
      });
    }
    expect(await env.count(s, "sent")).toBe(2);
  });

  it("stop: later steps of the stopped execution are refused; stopping an older one is stale", async () => {
    const s = subject();
    const e = execution(s, 3);
    const add = (ctx: Parameters<Parameters<typeof env.effects.commitStep>[2]>[0]) => {
      ctx.atCommit(env.increment(ctx, "sent"));
    };
    expect((await env.effects.commitStep(e, "first", add)).status).toBe("processed");
    expect(await env.effects.stop(e)).toBe("stopped");
    expect(await env.effects.stop(e)).toBe("stopped"); // again: still stopped
    expect(await env.effects.commitStep(e, "second", add)).toEqual({
      status: "stale",
      current: { position: e.position, executionName: e.executionName, stopped: true },
    });
    expect(await env.effects.stop(execution(s, 2))).toBe("stale");
    expect(await env.count(s, "sent")).toBe(1);
    // A stop before any step: the execution never writes.
    const early = execution(subject(), 1);
    expect(await env.effects.stop(early)).toBe("stopped");
    expect((await env.effects.commitStep(early, "first", add)).status).toBe("stale");
    expect(await env.count(early.subject, "sent")).toBe(0);
  });

  it("refuses another engine's write and a bad step name before anything is written", async () => {
    const s = subject();
    const e = execution(s, 1);
    await expect(
      env.effects.commitStep(e, "mixed", (ctx) => {
        ctx.atCommit(env.increment(ctx, "sent"));
        ctx.atCommit(env.foreignWrite());
      }),
    ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    expect(await env.effects.marker(e, "mixed")).toEqual({ applied: false });
    expect(await env.count(s, "sent")).toBe(0);
    const host = { step: <T>(_: string, fn: () => Promise<T>) => fn() };
    expect(() => env.effects.step(host, "", e, () => 0)).toThrow(OptionsError);
  });

  it("costs one request per step where the client counts them", async () => {
    if (!env.requests) return expect(engine.name).not.toBe("dynamodb"); // DynamoDB's client always counts
    const e = execution(subject(), 1);
    const before = env.requests();
    await env.effects.commitStep(e, "one", (ctx) => ctx.atCommit(env.increment(ctx, "sent")));
    await env.effects.commitStep(e, "one", (ctx) => ctx.atCommit(env.increment(ctx, "sent")));
    expect(env.requests() - before).toBe(2);
  });

  it("the dispatcher's commit moves the fence: an older execution started first is refused from its first step", async () => {
    const s = subject();
    const lambda = new FakeDurableLambda();
    const handler = durableSqsDispatcher({
      store: env.store,
      lambda,
      functionName: "orders-workflow:live",
      stepEffects: env.effects,
      messages: "accept",
      subject: () => s,
      position: (m) => Number(m.body),
      logger: quietLogger(),
      metrics: quietMetrics(),
    });
    for (const version of ["1", "2"]) {
      const out = await handler(sqsEvent(sqsRecord(version)), lambdaContext());
      expect(out.batchItemFailures).toEqual([]);
    }
    const [first, second] = lambda.started.map((x) => JSON.parse(x.payload) as DispatchedPayload);
    if (!first || !second) throw new Error("expected two starts");
    const add = (ctx: Parameters<Parameters<typeof env.effects.commitStep>[2]>[0]) => {
      ctx.atCommit(env.increment(ctx, "sent"));
    };
    expect(await env.effects.commitStep(first, "notify", add)).toMatchObject({
      status: "stale",
      current: { executionName: second.execution.executionName },
    });
    expect((await env.effects.commitStep(second, "notify", add)).status).toBe("processed");
    expect(await env.count(s, "sent")).toBe(1);
  });
});
