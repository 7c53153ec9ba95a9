import { describe, expect, it } from "vitest";
import { BROKEN_STORES } from "../../src/sim/broken.js";
import { type CampaignOptions, type CampaignSummary, runCampaign } from "../../src/sim/campaign.js";
import type { HistoryConfig } from "../../src/sim/history-config.js";
import type { InvariantId } from "../../src/sim/observer.js";

/**
 * The simulator must catch bugs: against deliberately broken stores, a broken sink and an unsafe guard option, it
 * reports violations of the invariant each one breaks (histories with no known issue's pattern, so it is not the
 * guard's own issue in regressions.test.ts that is caught).
 */
async function caught(
  o: Partial<CampaignOptions>,
  histories = 300,
  /** Stop once this invariant is caught: the histories after it would only repeat the finding. */
  until?: InvariantId,
): Promise<{ invariants: Set<InvariantId>; unexplained: number }> {
  const s = await runCampaign({
    histories,
    seed: 11,
    engine: "memory",
    ...(until ? { stopWhen: (sum) => unexplainedInvariants(sum).has(until) } : {}),
    ...o,
  });
  return { invariants: unexplainedInvariants(s), unexplained: s.unexplained };
}

/** The invariants broken in histories that show no known issue's pattern. */
function unexplainedInvariants(s: CampaignSummary): Set<InvariantId> {
  const invariants = new Set<InvariantId>();
  for (const f of s.failures)
    if (f.knownIssues.length === 0) for (const v of f.violations) invariants.add(v.invariant);
  return invariants;
}

const zombiesAndTtl = (c: HistoryConfig): HistoryConfig => ({
  ...c,
  faults: { ...c.faults, pauseRate: 0.5, ttlRate: 0.3, max: Math.max(c.faults.max, 3) },
});

const CASES: { name: string; expect: InvariantId; configure?: (c: HistoryConfig) => HistoryConfig }[] = [
  { name: "commit-ignores-fence", expect: "I4", configure: zombiesAndTtl },
  { name: "forgets-tokens", expect: "I6" },
  { name: "renew-keeps-lease", expect: "I3" },
  { name: "sticky-lease", expect: "I3" },
  { name: "counter-fences", expect: "I7", configure: zombiesAndTtl },
  { name: "early-ttl", expect: "I1" },
  { name: "lying-commit", expect: "I4" },
  { name: "commit-forgets-own", expect: "I6" },
];

describe("fault simulator catches broken stores", () => {
  it.each(CASES.map((c) => [c.name, c] as const))(
    "%s",
    async (name, c) => {
      const broken = BROKEN_STORES[name];
      if (!broken) throw new Error(name);
      const r = await caught(
        { wrapStore: broken.wrap, ...(c.configure ? { configure: c.configure } : {}) },
        300,
        c.expect,
      );
      expect(r.unexplained).toBeGreaterThan(0);
      expect([...r.invariants]).toContain(c.expect);
    },
    60_000,
  );

  it("a sink that ignores position and fence: I2 (zombie writes land, rows go back)", async () => {
    const r = await caught({ unfencedSink: true, configure: zombiesAndTtl }, 300, "I2");
    expect([...r.invariants]).toContain("I2");
  }, 60_000);

  it("an unsafe guard option: clockSkewMs 0 while clocks differ by up to 100 ms takes live holders over (I3)", async () => {
    // The clocks keep within 100 ms, as the deployment promises; renewals fail now and then, long handlers wait.
    const setup =
      (clockSkewMs: number) =>
      (c: HistoryConfig): HistoryConfig => ({
        ...c,
        guard: { ...c.guard, clockSkewMs, busy: "wait" },
        declaredSkewMs: 100,
        offsets: c.offsets.map((_, i) => (i % 2 === 0 ? 50 : -50)),
        faults: { ...c.faults, pauseRate: 0, storeRate: 0.3, storeKinds: ["fail-before", "hang"], max: 4 },
        subjects: 1,
        eventsPerSubject: 3,
        minWorkMs: 800,
        maxWorkMs: 1600,
      });
    const unsafe = await caught({ configure: setup(0) }, 300, "I3");
    expect([...unsafe.invariants]).toContain("I3");
    // The same histories with the guard told the truth: no takeover of a live holder.
    const safe = await caught({ configure: setup(100) });
    expect([...safe.invariants]).not.toContain("I3");
  }, 60_000);

  it("the same unsafe option is not reported when the clocks really are beyond the bound (documented)", async () => {
    const s = await runCampaign({
      histories: 100,
      seed: 11,
      engine: "memory",
      configure: (c) => ({ ...c, offsets: c.offsets.map((_, i) => (i % 2 === 0 ? 400 : -400)) }),
    });
    expect(s.beyondSkew).toBe(100);
    for (const f of s.failures) for (const v of f.violations) expect(v.fencing).toBe(true);
  }, 60_000);
});
