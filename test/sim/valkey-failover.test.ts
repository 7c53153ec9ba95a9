import { describe, expect, it } from "vitest";
import { runCampaign, runSeed } from "../../src/sim/campaign.js";

const HISTORIES = 100;

/**
 * The failover fault on Valkey (src/engines/valkey/sim-replica.ts): once per history the server fails over to a
 * replica that lacks the writes it had not caught up with. Without waitForReplicas, acknowledged steps are lost and
 * the checks see it; with it, every step the guard acted on was on the replica, so nothing it acknowledged is lost.
 */
describe("fault simulator: Valkey failover to a lagging replica", () => {
  it("without waitForReplicas, acknowledged commits are lost: events never applied, state and sinks going back", async () => {
    const s = await runCampaign({
      histories: HISTORIES,
      seed: 1,
      engine: "valkey",
      failover: { waitForReplicas: false },
    });
    expect(s.faults.failover).toBeGreaterThan(HISTORIES / 2);
    expect(s.faults["wait-timeout"]).toBeUndefined();
    expect(s.violations).toBeGreaterThan(10);
    // A lost commit loses its folded effects with it: nothing is applied twice, things are lost or go back.
    expect(s.byInvariant.I2).toBeGreaterThan(0);
    expect(s.byInvariant.I4).toBeGreaterThan(0);
    const messages = s.failures.flatMap((f) => f.violations.map((v) => v.message));
    expect(messages.some((m) => / applied \d+ times/.test(m))).toBe(false);
    expect(messages.some((m) => /acknowledged as processed, but nothing committed it/.test(m))).toBe(true);
  }, 180_000);

  it("with waitForReplicas, WAIT times out now and then, and no failover breaks an invariant", async () => {
    const s = await runCampaign({
      histories: HISTORIES,
      seed: 1,
      engine: "valkey",
      failover: { waitForReplicas: true },
    });
    expect(s.faults.failover).toBeGreaterThan(HISTORIES / 2);
    expect(s.faults["wait-timeout"]).toBeGreaterThan(20);
    expect(s.violations, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
  }, 180_000);

  it("is off by default, replays from its seed, and is refused on an engine without it", async () => {
    const plain = await runCampaign({ histories: 20, seed: 1, engine: "valkey" });
    expect(plain.faults.failover).toBeUndefined();
    const o = { engine: "valkey", failover: { waitForReplicas: false } } as const;
    const [a, b] = [await runSeed(24, o), await runSeed(24, o)];
    expect(a.faults.failover).toBe(1);
    expect(b.digest).toBe(a.digest);
    expect(b.violations.map((v) => v.message.replace(/h24-\w+/g, ""))).toEqual(
      a.violations.map((v) => v.message.replace(/h24-\w+/g, "")),
    );
    await expect(runSeed(1, { engine: "memory", failover: { waitForReplicas: false } })).rejects.toThrow(
      "the memory engine has no failover fault",
    );
  }, 60_000);
});
