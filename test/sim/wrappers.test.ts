import { describe, expect, it } from "vitest";
import { BROKEN_STORES } from "../../src/sim/broken.js";
import { runCampaign, runSeed } from "../../src/sim/campaign.js";

/**
 * Wrapper histories (src/sim/wrapper-history.ts): deliveries through the real SQS wrapper in batches, FIFO or not,
 * `run` and `apply`, the handler throwing now and then. They break no invariant, and their answer checks fire.
 */
describe("fault simulator: histories through the Lambda wrappers", () => {
  it("200 memory histories break no invariant", async () => {
    const s = await runCampaign({ histories: 200, seed: 7, engine: "memory", wrappers: true });
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of ["handler-error", "duplicate", "lose-response", "pause"] as const)
      expect(s.faults[k], k).toBeGreaterThan(10);
    expect(s.states).toBeGreaterThan(195);
  }, 180_000);

  it("replays a seed exactly", async () => {
    const a = await runSeed(5, { engine: "memory", wrappers: true, trace: true });
    const b = await runSeed(5, { engine: "memory", wrappers: true, trace: true });
    expect(a.trace?.some((l) => l.includes("batch item failures"))).toBe(true);
    expect(b.trace).toEqual(a.trace);
  });

  it("a record returned for redelivery though its own commit landed is an I6 violation", async () => {
    const broken = BROKEN_STORES["refuses-landed"];
    if (!broken) throw new Error("refuses-landed");
    const s = await runCampaign({
      histories: 300,
      seed: 11,
      engine: "memory",
      wrappers: true,
      wrapStore: broken.wrap,
      configure: (c) => ({ ...c, applyShare: 0.6 }),
      stopWhen: (sum) => (sum.byInvariant.I6 ?? 0) > 0,
    });
    expect(s.byInvariant.I6).toBeGreaterThan(0);
    expect(
      s.failures.some((f) => f.violations.some((v) => v.message.includes("its own commit landed"))),
    ).toBe(true);
  }, 180_000);
});
