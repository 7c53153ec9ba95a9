import { describe, expect, it } from "vitest";
import { runCampaign } from "../../src/sim/campaign.js";

const HISTORIES = 1000;

describe("fault simulator: seeded histories on SQLite", () => {
  it(`${HISTORIES} histories break no invariant`, async () => {
    const s = await runCampaign({ histories: HISTORIES, seed: 1, store: "sqlite" });
    expect(s.histories).toBe(HISTORIES);
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    expect(s.violations, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of [
      "fail-before",
      "lose-response",
      "delay",
      "hang",
      "pause",
      "duplicate",
      "ttl-delete",
    ] as const)
      expect(s.faults[k], k).toBeGreaterThan(5);
  }, 180_000);
});
