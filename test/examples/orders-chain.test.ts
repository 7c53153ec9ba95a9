import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ordersScenarioPublishing } from "../../examples/orders/scenario.js";
import { type DemoReport, runDemo } from "../../src/cli/demo/run-demo.js";
import { LocalRuntime } from "../../src/local/runtime.js";

/**
 * Two guarded pipelines chained (orders → "order charged" → fulfilment), end to end on the local runtime under the
 * demo's faults, three seeds. Through the outbox (`ctx.publish`, the relay on the outbox table's stream failing after
 * some sends, duplicated stream batches), every charged order is shipped once. The same pipelines with "order
 * charged" sent from the orders handler instead (a guarded pipeline without an outbox): a run that fails after
 * sending, or whose commit is refused, has sent, and its retry sends again under a new SQS message id, which the
 * guarded consumer cannot tell from a new message: orders shipped twice. test/demo.test.ts runs the outbox variant
 * with guard off (no guard anywhere) as well.
 */
const SEEDS = [1, 2, 3];
/** Runs of the orders function that die after the charge and "order charged", before the commit (the demo: 5 %). */
const CRASH_RATE = 0.2;
const reports = new Map<string, DemoReport>();
let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await LocalRuntime.start({
    dynamodbEndpoint: inject("dynamodbEndpoint"),
    services: { s3: false },
  });
  for (const publish of ["outbox", "direct"] as const)
    for (const seed of SEEDS)
      reports.set(
        `${publish}/${seed}`,
        await runDemo({
          runtime,
          scenarios: [ordersScenarioPublishing(publish, { crashRate: CRASH_RATE })],
          seed,
          scale: 0.5,
          guards: ["on"],
        }),
      );
}, 600_000);

afterAll(async () => {
  await runtime?.stop();
});

const row = (publish: "outbox" | "direct", seed: number) => {
  const r = reports.get(`${publish}/${seed}`)?.scenarios.find((s) => s.guard === "on");
  if (!r) throw new Error(`no orders row for ${publish}, seed ${seed}`);
  return r;
};

describe.each(SEEDS)("orders → fulfilment, seed %i", (seed) => {
  it("through the outbox: every order charged once and shipped once, the relay having sent some twice", () => {
    const r = row("outbox", seed);
    const context = JSON.stringify(r.details);
    expect({ dup: r.duplicateEffects, lost: r.lostEvents }, context).toEqual({ dup: 0, lost: 0 });
    expect(r.details.shipments, context).toBe(r.distinctEvents);
    // Faults hit the relay: it sent more than there are messages, and the consumer took the resends as duplicates.
    expect(r.details["order-charged sends by the relay"], context).toBeGreaterThan(r.distinctEvents);
  });
});

it("sent from the handler instead: orders shipped twice downstream, while each is still charged once", () => {
  const doubles = SEEDS.map((seed) => Number(row("direct", seed).details["shipments beyond one per order"]));
  expect(
    doubles.reduce((a, b) => a + b, 0),
    JSON.stringify(SEEDS.map((s) => row("direct", s).details)),
  ).toBeGreaterThan(0);
  for (const seed of SEEDS) {
    const r = row("direct", seed);
    expect(r.lostEvents).toBe(0);
    expect(r.details["orders charged twice or more at the provider (standard queue)"]).toBe(0);
    expect(r.details["orders charged twice or more at the provider (FIFO queue)"]).toBe(0);
  }
});
