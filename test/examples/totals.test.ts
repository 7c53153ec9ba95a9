import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { totalsScenario } from "../../examples/totals/scenario.js";
import { type DemoReport, runDemo } from "../../src/cli/demo/run-demo.js";
import { LocalRuntime } from "../../src/local/runtime.js";

/**
 * The demo's totals pipeline (an orders table's DynamoDB stream projected into per-customer totals) end to end on
 * the local runtime, on the demo's code path at half size, for three seeds: guard off, retried stream batches count
 * changes twice and slow runs write old amounts over newer ones, counted from the tables; guard on, exact.
 */
const SEEDS = [1, 2, 3];
const reports = new Map<number, DemoReport>();
let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await LocalRuntime.start({
    dynamodbEndpoint: inject("dynamodbEndpoint"),
    services: { sqs: false },
  });
  for (const seed of SEEDS) {
    reports.set(seed, await runDemo({ runtime, scenarios: [totalsScenario], seed, scale: 0.5 }));
  }
}, 300_000);

afterAll(async () => {
  await runtime?.stop();
});

describe.each(SEEDS)("totals demo, seed %i", (seed) => {
  const row = (guard: "off" | "on") => {
    const r = reports.get(seed)?.scenarios.find((s) => s.name === "totals" && s.guard === guard);
    if (!r) throw new Error(`no totals/${guard} row for seed ${seed}`);
    return r;
  };

  it("guard off: changes counted twice, customers' totals wrong", () => {
    const off = row("off");
    expect(off.duplicateEffects, JSON.stringify(off.details)).toBeGreaterThan(0);
    expect(off.details["customers with a wrong total"]).toBeGreaterThan(0);
  });

  it("guard on: every change applied once, every total exact, every view current", () => {
    const on = row("on");
    const context = JSON.stringify({ details: on.details, notes: on.notes });
    expect({ dup: on.duplicateEffects, stale: on.staleResults, lost: on.lostEvents }, context).toEqual({
      dup: 0,
      stale: 0,
      lost: 0,
    });
    expect(on.details["customers with a wrong total"], context).toBe(0);
    // Faults were really injected: more deliveries than changes, the same changes as guard off.
    expect(on.deliveries).toBeGreaterThan(on.distinctEvents);
    expect(on.distinctEvents).toBe(row("off").distinctEvents);
  });
});

it("guard off, over the three seeds: a slow run's old amount overwrote a newer one in some view", () => {
  const stale = SEEDS.map(
    (seed) => reports.get(seed)?.scenarios.find((s) => s.guard === "off")?.staleResults ?? 0,
  );
  expect(
    stale.reduce((a, b) => a + b, 0),
    JSON.stringify(stale),
  ).toBeGreaterThan(0);
});
