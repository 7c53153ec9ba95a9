import { describe, expect, inject, it } from "vitest";
import { BROKEN_ROW_KEYS, BROKEN_STORES } from "../../src/sim/broken.js";
import { type CampaignSummary, runCampaign } from "../../src/sim/campaign.js";
import type { InvariantId } from "../../src/sim/observer.js";

const HISTORIES = 100;

const invariantsOf = (s: CampaignSummary) =>
  new Set(s.failures.flatMap((f) => f.violations.map((v) => v.invariant)));

describe("fault simulator: seeded histories on inline state (InlineDynamoDBStore on DynamoDB Local)", () => {
  it(`${HISTORIES} histories break no invariant`, async () => {
    const started = Date.now();
    const s = await runCampaign({
      histories: HISTORIES,
      seed: 1,
      engine: "dynamodb",
      inline: true,
      endpoint: inject("dynamodbEndpoint"),
    });
    console.log(
      `chaos inline: ${JSON.stringify({ ...s, failures: undefined })} in ${Date.now() - started}ms`,
    );
    expect(s.histories).toBe(HISTORIES);
    expect(s.unexplained, JSON.stringify(s.failures.slice(0, 3))).toBe(0);
    for (const k of ["fail-before", "lose-response", "delay", "hang", "pause", "duplicate"] as const)
      expect(s.faults[k], k).toBeGreaterThan(3);
  }, 180_000);

  it("TTL of a zombie's claim leaves the row's write stamp: an older event after it is stale (seed 20266855)", async () => {
    // The zombie's direct row write (position 2) landed, then its expired claim was deleted; the older event's
    // write (position 1) then found no stamp when the simulator's TTL also removed eo_wpos/eo_wfence: I2.
    const s = await runCampaign({
      histories: 1,
      seed: 20266855,
      engine: "dynamodb",
      inline: true,
      endpoint: inject("dynamodbEndpoint"),
    });
    expect(s.faults["ttl-delete"]).toBe(1);
    expect(s.violations, JSON.stringify(s.failures)).toBe(0);
  }, 60_000);

  // The checks hold on this backend too: a broken inline store is caught (its effects live in the user's row).
  it.each([
    ["forgets-tokens", "I6"],
    ["commit-forgets-own", "I6"],
    ["early-ttl", "I1"],
  ] as const)(
    "catches %s (%s)",
    async (name, invariant: InvariantId) => {
      const s = await runCampaign({
        histories: 60,
        seed: 11,
        engine: "dynamodb",
        inline: true,
        endpoint: inject("dynamodbEndpoint"),
        wrapStore: BROKEN_STORES[name]?.wrap,
        // Caught once is enough: the histories after it would only repeat the finding.
        stopWhen: (sum) => invariantsOf(sum).has(invariant),
      });
      const seen = invariantsOf(s);
      expect(s.unexplained).toBeGreaterThan(0);
      expect([...seen]).toContain(invariant);
    },
    120_000,
  );

  // The adversarial subjects (src/sim/names.ts) find a row mapping that is not one-to-one: an ordered subject
  // spelled like a dedupe event's key shares its row, and the dedupe event is lost (I1) or overwritten (I4).
  it("catches colliding-row-keys (I1 or I4)", async () => {
    const s = await runCampaign({
      histories: 200,
      seed: 5,
      engine: "dynamodb",
      inline: true,
      endpoint: inject("dynamodbEndpoint"),
      rowKey: BROKEN_ROW_KEYS["colliding-row-keys"]?.rowKey,
      stopWhen: (sum) => sum.unexplained > 0,
    });
    expect(s.unexplained).toBeGreaterThan(0);
    expect([...invariantsOf(s)].some((i) => i === "I1" || i === "I4")).toBe(true);
  }, 120_000);
});
