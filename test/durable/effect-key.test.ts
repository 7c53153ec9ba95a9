import { randomUUID } from "node:crypto";
import { type DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { effectKey } from "../../src/core/effect-key.js";
import { positionFromNumber } from "../../src/core/position.js";
import { type DispatchedPayload, durableExecutionName, stepEffectKey } from "../../src/durable/index.js";
import { markerStep } from "../../src/durable/step-keys.js";
import { MemoryStepEffects } from "../../src/engines/memory/step-effects.js";
import { quietLogger, quietMetrics } from "./harness.js";

function payloadOf(subject: string, identity = "v1"): DispatchedPayload {
  return {
    effectivelyOnce: 1,
    execution: {
      executionName: durableExecutionName(subject, identity),
      subject,
      identity,
      position: positionFromNumber(1),
    },
    event: { kind: "message", body: "{}" },
    detail: null,
  };
}

beforeAll(async () => {
  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: true });
});
afterAll(async () => {
  await LocalDurableTestRunner.teardownTestEnvironment();
});

describe("ctx.effectKey in a guarded durable step (memory engine)", () => {
  it("is the same on the step's retry and in a second execution of the event; another for each step", async () => {
    const effects = new MemoryStepEffects({ logger: quietLogger(), metrics: quietMetrics() });
    const charged = new Map<string, number>();
    const seen: { step: string; key: string; stepId: string | undefined }[] = [];
    const crashes = { left: 1 };
    // Two `charge` steps (two order lines); the first crashes once after its API call, before its commit.
    const handlerFunction = withDurableExecution(
      async (payload: DispatchedPayload, context: DurableContext) => {
        const out: string[] = [];
        for (const line of ["a", "b"]) {
          const outcome = await effects.step(context, "charge", payload, (ctx) => {
            const key = ctx.effectKey("charge");
            seen.push({ step: line, key, stepId: ctx.stepId });
            charged.set(key, (charged.get(key) ?? 0) + 1); // the provider keeps one charge per key
            if (line === "a" && crashes.left-- > 0) throw new Error("crash after the call");
            return key;
          });
          out.push(outcome.status);
        }
        return out;
      },
    );
    const payload = payloadOf(`o#${randomUUID().slice(0, 12)}`);
    const first = await new LocalDurableTestRunner({ handlerFunction }).run({ payload });
    expect(first.getStatus()).toBe("SUCCEEDED");
    expect(first.getResult()).toEqual(["processed", "processed"]);
    const again = await new LocalDurableTestRunner({ handlerFunction }).run({ payload });
    expect(again.getResult()).toEqual(["duplicate", "duplicate"]);

    const keysOf = (line: string) => new Set(seen.filter((s) => s.step === line).map((s) => s.key));
    expect(seen.filter((s) => s.step === "a")).toHaveLength(3); // the crash, its retry, the second execution
    expect(keysOf("a").size).toBe(1);
    expect(keysOf("b").size).toBe(1);
    expect([...keysOf("a")][0]).not.toBe([...keysOf("b")][0]);
    expect(charged.size).toBe(2); // two steps, two keys: each charged once by a keyed provider
    // The key is the step's scope (execution, operation id, name) and the effect's name, whatever the engine.
    const a = seen.find((s) => s.step === "a");
    const identity = { name: "charge", id: a?.stepId ?? "" };
    expect(a?.key).toBe(effectKey({ kind: "step", step: markerStep(payload.execution, identity) }, "charge"));
    expect(stepEffectKey(payload, identity, "charge")).toBe(a?.key);
  });

  it("differs between events, between a step and the guard's event key, and between names", async () => {
    const effects = new MemoryStepEffects({ logger: quietLogger(), metrics: quietMetrics() });
    const keyOf = async (payload: DispatchedPayload, step: string, name: string) => {
      let key = "";
      await effects.commitStep(payload, step, (ctx) => {
        key = ctx.effectKey(name);
      });
      return key;
    };
    const subject = `o#${randomUUID().slice(0, 12)}`;
    const p1 = payloadOf(subject, "v1");
    const p2 = payloadOf(subject, "v2");
    const keys = [
      await keyOf(p1, "charge", "charge"),
      await keyOf(p2, "charge", "charge"),
      await keyOf(p1, "refund", "charge"),
      await keyOf(p1, "charge-2", "email"),
      effectKey({ kind: "event", subject, identity: "v1" }, "charge"),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    // The same step key applied again (a duplicate) gets the same key.
    expect(await keyOf(p1, "charge", "charge")).toBe(keys[0]);
  });
});
