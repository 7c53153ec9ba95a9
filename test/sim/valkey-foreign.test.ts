import { describe, expect, it } from "vitest";
import { BROKEN_WRITE_CHECKS } from "../../src/sim/broken.js";
import { type CampaignSummary, runCampaign } from "../../src/sim/campaign.js";
import type { HistoryConfig } from "../../src/sim/history-config.js";

/** Every history may hold a value the server refuses: an event without a position, no duplicated messages. */
const withDedupeEvent = (c: HistoryConfig): HistoryConfig => ({
  ...c,
  dedupeEvents: Math.max(c.dedupeEvents, 1),
  faults: { ...c.faults, duplicateRate: 0 },
});

const messages = (s: CampaignSummary) => s.failures.flatMap((f) => f.violations.map((v) => v.message));

/**
 * Foreign values in effect targets (src/sim/foreign-values.ts): on Valkey, some histories find one event's counter
 * written by someone else. The refusal route or exact effects pass; the pre-write check of before the server's rules
 * (`--break pattern-write-check`) lets a commit land half, and every redelivery again: I1.
 */
describe("fault simulator: foreign values in Valkey effect targets", () => {
  it("the scripts' checks: the refusal route or exact effects, no violation", async () => {
    const s = await runCampaign({ histories: 150, seed: 7, engine: "valkey", configure: withDedupeEvent });
    expect(s.faults["foreign-value"]).toBeGreaterThan(20);
    expect(s.violations, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
  }, 300_000);

  it("--break pattern-write-check: a commit lands half, I1", async () => {
    expect(Object.keys(BROKEN_WRITE_CHECKS)).toContain("pattern-write-check");
    const s = await runCampaign({
      histories: 300,
      seed: 7,
      engine: "valkey",
      configure: withDedupeEvent,
      brokenWriteCheck: true,
      stopWhen: (sum) => messages(sum).some((m) => m.includes("landed half")),
    });
    expect(s.byInvariant.I1).toBeGreaterThan(0);
    expect(messages(s).some((m) => m.includes("landed half"))).toBe(true);
  }, 300_000);
});
