import { describe, expect, it } from "vitest";
import { runSeed } from "../../src/sim/campaign.js";
import { EXHAUSTIVE_CASES, replayPath } from "../../src/sim/exhaustive.js";

/**
 * Real violations the simulator found in the guard (src/core), replayed: each failed before its fix.
 *
 * lease-lost-to-older-event: a run holds event v2 of a subject; its commit is delayed (outage) past its lease. The
 * redelivered OLDER event v1 claims the expired item (allowed: cpos < v1) and commits v1. v2's commit is then
 * refused by the newer fence, and `refusedBy` (src/core/guard.ts) calls it `lease-lost`, which is acknowledged
 * ("that holder commits or retries"), but that holder commits v1, never v2: v2 is acknowledged and lost (I1: never
 * applied; I4: acknowledged with nothing committing it; I2: a direct sink write of v2 is ahead of the committed
 * state). Fixed: `lease-lost` only when the holder is the same event or a newer position; an older holder makes the
 * outcome `busy` (not acknowledged), so v2 is redelivered and commits.
 */
describe("regressions found by the fault simulator", () => {
  // Replay: npm run chaos -- --replay 64 (on DynamoDB Local too: --replay 533 --store dynamodb)
  it("seed 64: an event whose claim an older event took over is retried, not acknowledged and lost", async () => {
    const r = await runSeed(64, { engine: "memory", trace: true });
    expect(r.knownIssues).toEqual([]);
    expect(r.violations).toEqual([]);
  });

  // The minimal form: 2 workers, 2 events, 2 outages, no pause, clocks equal (an exhaustive-run path).
  // Replay: npm run chaos -- --replay-path 1:0,1,0,0,0,0,0,0,0,1,0,0,0,0
  it("minimal: v1's claim and v2's commit hang; v1 takes v2's expired claim; v2 is retried and applied", async () => {
    const c = EXHAUSTIVE_CASES.find((x) => x.name.includes("outages"));
    if (!c) throw new Error("case missing");
    const r = await replayPath(c, [0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
    expect(r.knownIssues).toEqual([]);
    expect(r.violations).toEqual([]);
  });
});
