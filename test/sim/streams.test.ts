import { describe, expect, it } from "vitest";
import { runCampaign, runSeed } from "../../src/sim/campaign.js";

/**
 * Stream histories (src/sim/stream-history.ts): the events put on a stream (shards, a split, a producer's retried
 * puts), read in batches from each lane's checkpoint through the real Kinesis wrapper, retried from the first failed
 * record, bisected, redelivered after a lost checkpoint. They break no invariant, and a checkpoint that skips failed
 * records is caught.
 */
describe("fault simulator: histories through the Kinesis wrapper", () => {
  it("300 memory histories break no invariant, with every stream fault drawn", async () => {
    const s = await runCampaign({ histories: 300, seed: 20261129, engine: "memory", streams: true });
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of [
      "split",
      "producer-duplicate",
      "checkpoint-lost",
      "handler-error",
      "lose-response",
    ] as const)
      expect(s.faults[k], k).toBeGreaterThan(10);
    expect(s.faults.bisect, "bisect").toBeGreaterThan(0);
    expect(s.states).toBeGreaterThan(295);
  }, 180_000);

  it("replays a seed exactly, each answer naming the first failed record", async () => {
    const a = await runSeed(5, { engine: "memory", streams: true, trace: true });
    const b = await runSeed(5, { engine: "memory", streams: true, trace: true });
    expect(a.trace?.some((l) => l.includes("checkpoint"))).toBe(true);
    expect(b.trace).toEqual(a.trace);
  });

  it("a checkpoint that moves past failed records loses events: I1 fires", async () => {
    const s = await runCampaign({
      histories: 300,
      seed: 11,
      engine: "memory",
      streams: true,
      checkpointPastFailures: true,
      stopWhen: (sum) => (sum.byInvariant.I1 ?? 0) > 0,
    });
    expect(s.byInvariant.I1).toBeGreaterThan(0);
    expect(s.failures.some((f) => f.violations.some((v) => v.message.includes("never applied")))).toBe(true);
  }, 180_000);
});
