import { describe, expect, it } from "vitest";
import { createGuard } from "../src/core/guard.js";
import { positionFromNumber } from "../src/core/position.js";
import { durableExecutionName } from "../src/durable/index.js";
import { MemoryStepEffects } from "../src/engines/memory/step-effects.js";
import { type MemoryAtomicWrite, MemoryStore } from "../src/engines/memory/store.js";
import { LocalRuntime } from "../src/local/runtime.js";
import { quietLogger, quietMetrics } from "./durable/harness.js";

/** Names renamed for one meaning each (docs/glossary.md): the old ones, deprecated, still do what the new ones do. */
describe("deprecated aliases of renamed names", () => {
  const event = (n: number) => ({
    subject: "orders/1",
    identity: `v${n}`,
    position: positionFromNumber(n),
  });

  it("a MemoryAtomicWrite with `apply` (now `land`) is still made at commit, and refused when it says so", async () => {
    const guard = createGuard({ store: new MemoryStore() });
    const made: number[] = [];
    const write = (n: number, lands: boolean): MemoryAtomicWrite => ({
      engine: "memory",
      description: `write ${n}`,
      apply: () => made.push(n) > 0 && lands,
    });
    const first = await guard.apply(event(1), (ctx) => ctx.atCommit(write(1, true)));
    const second = await guard.apply(event(2), (ctx) => ctx.atCommit(write(2, false)));
    expect(first).toMatchObject({
      status: "processed",
      writes: [{ description: "write 1", status: "applied" }],
    });
    expect(second).toMatchObject({
      status: "processed",
      writes: [{ description: "write 2", status: "stale" }],
    });
    expect(made).toEqual([1, 2]);
  });

  it("StepEffects.apply is commitStep: a step applied once under one key, then a duplicate", async () => {
    const effects = new MemoryStepEffects({ logger: quietLogger(), metrics: quietMetrics() });
    const execution = {
      executionName: durableExecutionName("orders/1", "v1"),
      subject: "orders/1",
      identity: "v1",
      position: positionFromNumber(1),
    };
    expect(await effects.apply(execution, "charge", () => 1)).toMatchObject({
      status: "processed",
      result: 1,
    });
    expect(await effects.commitStep(execution, "charge", () => 2)).toMatchObject({
      status: "duplicate",
      result: 1,
    });
  });

  it("LocalRuntime.applyEnv is setEnv", () => {
    const restore = () => {};
    const calls: Record<string, string>[] = [];
    const runtime = {
      setEnv: (extra: Record<string, string>) => {
        calls.push(extra);
        return restore;
      },
    };
    expect(LocalRuntime.prototype.applyEnv.call(runtime as unknown as LocalRuntime, { A: "1" })).toBe(
      restore,
    );
    expect(calls).toEqual([{ A: "1" }]);
  });
});
