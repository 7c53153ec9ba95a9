import { describe, expect, it } from "vitest";
import { runCampaign } from "../../src/sim/campaign.js";

const HISTORIES = 100;

describe("fault simulator: seeded histories on Valkey / Redis", () => {
  it(`${HISTORIES} histories break no invariant`, async () => {
    const s = await runCampaign({ histories: HISTORIES, seed: 1, engine: "valkey" });
    expect(s.histories).toBe(HISTORIES);
    expect(s.violations, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of ["fail-before", "lose-response", "delay", "hang", "pause", "duplicate"] as const)
      expect(s.faults[k], k).toBeGreaterThan(5);
  }, 180_000);
});
