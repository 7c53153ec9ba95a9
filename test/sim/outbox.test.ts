import { describe, expect, it } from "vitest";
import type { OutboxBreak } from "../../src/sim/broken.js";
import { runCampaign, runSeed } from "../../src/sim/campaign.js";
import type { InvariantId } from "../../src/sim/observer.js";

/**
 * Outbox histories (src/sim/outbox-history.ts): handlers publish at commit through the engine's outbox, relay copies
 * race under faults (crashes after sending, stalls past their lease and past the FIFO deduplication window, failed
 * and lost sends, lost claims and marks, restarts) to a standard or FIFO queue, and a consumer guarded by message id
 * counts each message. They break no invariant (I1–I7 upstream and down, O1–O5), and each broken relay or publisher
 * is caught.
 */
describe("fault simulator: publish at commit through the outbox", () => {
  it("300 memory histories break no invariant, with every relay fault drawn", async () => {
    const s = await runCampaign({ histories: 300, seed: 20261129, engine: "memory", outbox: true });
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of [
      "claim-lost",
      "relay-stall",
      "relay-crash",
      "send-lost",
      "send-failed",
      "deduplicated",
    ] as const)
      expect(s.faults[k], k).toBeGreaterThan(10);
    for (const k of ["mark-lost", "mark-failed", "stall-past-dedupe", "dedupe-expired"] as const)
      expect(s.faults[k], k).toBeGreaterThan(3);
    expect(s.states).toBeGreaterThan(295);
  }, 300_000);

  it("100 SQLite histories break no invariant", async () => {
    const s = await runCampaign({ histories: 100, seed: 20261129, engine: "sqlite", outbox: true });
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    expect(s.faults["relay-crash"]).toBeGreaterThan(0);
  }, 300_000);

  it("replays a seed exactly: the relays' claims, sends and marks, the consumers' receives", async () => {
    const a = await runSeed(20261132, { engine: "memory", outbox: true, trace: true });
    const b = await runSeed(20261132, { engine: "memory", outbox: true, trace: true });
    for (const what of ["claims [", " sent ", " mark ", "c0 receives"])
      expect(
        a.trace?.some((l) => l.includes(what)),
        what,
      ).toBe(true);
    expect(b.trace).toEqual(a.trace);
  });

  it.each<[OutboxBreak, InvariantId, string]>([
    ["relay-mark-before-send", "O1", "committed, never sent"],
    ["publish-outside-commit", "O2", "never committed"],
    ["relay-fresh-ids", "O3", "not eo1_"],
  ])(
    "--break %s is caught (%s)",
    async (outboxBreak, invariant, says) => {
      const s = await runCampaign({
        histories: 200,
        seed: 20261129,
        engine: "memory",
        outbox: true,
        outboxBreak,
        stopWhen: (sum) => (sum.byInvariant[invariant] ?? 0) >= 3,
      });
      expect(s.byInvariant[invariant]).toBeGreaterThanOrEqual(3);
      const messages = s.failures.flatMap((f) => f.violations.filter((v) => v.invariant === invariant));
      expect(
        messages.some((v) => v.message.includes(says)),
        JSON.stringify(messages.slice(0, 3)),
      ).toBe(true);
    },
    300_000,
  );
});
