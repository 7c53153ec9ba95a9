import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { scenarios } from "../examples/index.js";
import { runDemo } from "../src/local/demo/run-demo.js";
import { LocalRuntime } from "../src/local/runtime.js";

/**
 * The demo's claims, on the same code path as `npm run demo` at a smaller size, for several seeds:
 * guard on removes every failure; guard off shows each scenario's failure.
 */
const SCALE = 0.5;

let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await LocalRuntime.start({ dynamodbEndpoint: inject("dynamodbEndpoint") });
});

afterAll(async () => {
  await runtime?.stop();
});

describe.each([1, 2, 3])("demo with seed %i", (seed) => {
  it("guard on: no duplicate effect, stale result or lost event; guard off: the classic failures", async () => {
    const report = await runDemo({ runtime, scenarios, seed, scale: SCALE });
    const row = (name: string, guard: "off" | "on") => {
      const r = report.scenarios.find((s) => s.name === name && s.guard === guard);
      if (!r) throw new Error(`no ${name}/${guard} row`);
      return r;
    };
    for (const name of ["records", "images", "orders"]) {
      const on = row(name, "on");
      const context = `${name}, guard on, seed ${seed}: ${JSON.stringify({ details: on.details, notes: on.notes })}`;
      expect(
        { name, dup: on.duplicateEffects, stale: on.staleResults, lost: on.lostEvents },
        context,
      ).toEqual({
        name,
        dup: 0,
        stale: 0,
        lost: 0,
      });
      // Faults were really injected: more deliveries than events.
      expect(on.deliveries).toBeGreaterThan(on.distinctEvents);
      expect(row(name, "off").lostEvents).toBe(0);
    }
    expect(row("records", "off").duplicateEffects).toBeGreaterThan(0);
    expect(row("orders", "off").duplicateEffects).toBeGreaterThan(0);
    expect(row("images", "off").staleResults).toBeGreaterThan(0);
    // Both modes saw the same uploads.
    expect(row("records", "on").distinctEvents).toBe(row("records", "off").distinctEvents);
  }, 300_000);
});
