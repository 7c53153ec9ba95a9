import { randomUUID } from "node:crypto";
import { type DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  type DispatchedPayload,
  durableExecutionName,
  nextStepIdentity,
  type StepEffectContext,
} from "../../../src/durable/index.js";
import { STEP_ENGINES } from "./engines.js";
import type { StepEngineEnv } from "./under-test.js";

/** The payload the dispatcher would send for version 1 of `subject`. */
function payloadOf(subject: string): DispatchedPayload {
  return {
    effectivelyOnce: 1,
    execution: {
      executionName: durableExecutionName(subject, "v1"),
      subject,
      identity: "v1",
      position: positionFromNumber(1),
    },
    event: { kind: "message", body: "{}" },
    detail: null,
  };
}

/**
 * One `charge` step per order line, each under the same name: lines a and b with `effects.step`, line c with
 * `apply` inside the workflow's own `context.step` (crashing once after its effects, before the checkpoint), and
 * lines d and e in a map, each item's step in a child context of its own.
 */
function chargeEveryLine(env: StepEngineEnv, crashes: { left: number }) {
  const charge = (line: string) => (ctx: StepEffectContext) => {
    ctx.atCommit(env.increment(ctx, `line-${line}`));
    ctx.atCommit(env.increment(ctx, "charges"));
    return line;
  };
  return withDurableExecution(async (payload: DispatchedPayload, context: DurableContext) => {
    const results: unknown[] = [];
    for (const line of ["a", "b"])
      results.push(await env.effects.step(context, "charge", payload, charge(line)));
    const c = nextStepIdentity(context, "charge");
    results.push(
      await context.step("charge", async () => {
        const out = await env.effects.commitStep(payload, c, charge("c"));
        if (crashes.left-- > 0) throw new Error("crash between the effect and the checkpoint");
        return out;
      }),
    );
    const mapped = await context.map("lines", ["d", "e"], async (child, line) =>
      env.effects.step(child, "charge", payload, charge(line)),
    );
    results.push(...mapped.getResults());
    return results.map((r) => (r as { status: string }).status);
  });
}

beforeAll(async () => {
  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: true });
});
afterAll(async () => {
  await LocalDurableTestRunner.teardownTestEnvironment();
});

describe.each(STEP_ENGINES)("repeated step names: $name", (engine) => {
  let env: StepEngineEnv;
  beforeAll(async () => {
    env = await engine.open();
  });
  afterAll(async () => {
    await env?.close();
  });

  it("charges each line once: five `charge` steps apply five times, a crash and a second execution add nothing", async () => {
    const subject = `o#${randomUUID().slice(0, 12)}`;
    const payload = payloadOf(subject);
    const crashes = { left: 1 };
    const handlerFunction = chargeEveryLine(env, crashes);
    const first = await new LocalDurableTestRunner({ handlerFunction }).run({ payload });
    expect(first.getStatus()).toBe("SUCCEEDED");
    // Line c: its first attempt landed and crashed; the retry finds the marker its own effects left.
    expect(first.getResult()).toEqual(["processed", "processed", "duplicate", "processed", "processed"]);
    expect(crashes.left).toBeLessThan(0); // line c crashed once, and its rerun found its own marker
    // A second execution of the event (the dispatcher forgot it): every step finds its marker.
    const again = await new LocalDurableTestRunner({ handlerFunction }).run({ payload });
    expect(again.getResult()).toEqual(["duplicate", "duplicate", "duplicate", "duplicate", "duplicate"]);
    expect(await env.count(subject, "charges")).toBe(5);
    for (const line of ["a", "b", "c", "d", "e"]) expect(await env.count(subject, `line-${line}`)).toBe(1);
  });

  it("refuses a context that gives no step ids, before anything runs", () => {
    const payload = payloadOf(`o#${randomUUID().slice(0, 12)}`);
    const host = { step: async () => undefined };
    expect(() => env.effects.step(host as never, "charge", payload, () => 1)).toThrow(OptionsError);
  });
});
