import { describe, expect, it } from "vitest";
import { runCampaign } from "../../src/sim/campaign.js";

const HISTORIES = 300;

describe("fault simulator: seeded histories on SQLite", () => {
  it(`${HISTORIES} histories break no invariant`, async () => {
    const s = await runCampaign({ histories: HISTORIES, seed: 1, engine: "sqlite" });
    expect(s.histories).toBe(HISTORIES);
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    expect(s.violations, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of ["fail-before", "lose-response", "delay", "hang", "pause", "duplicate"] as const)
      expect(s.faults[k], k).toBeGreaterThan(5);
    // TTL deletes only a record past its expiry: rare by design (2 in these 300).
    expect(s.faults["ttl-delete"]).toBeGreaterThan(0);
  }, 180_000);
});
