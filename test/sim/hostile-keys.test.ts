import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runCampaign } from "../../src/sim/campaign.js";

const run = promisify(execFile);

/**
 * The key rule (src/core/key-text.ts) under `npm run chaos`: histories with subjects and identities spelled with
 * lone surrogates and NUL beside their lossy look-alike (src/sim/hostile-keys.ts). Correct: no violation. With the
 * rule undone (`--break lossy-keys`: the guard gets the lossy spelling, as UTF-8 gave every engine before the rule),
 * different events share a state item, and the run says so.
 */
describe("fault simulator: hostile keys", () => {
  for (const store of ["memory", "sqlite"] as const) {
    it(`${store}: 200 histories with hostile keys break no invariant; the malformed events were refused`, async () => {
      const s = await runCampaign({ histories: 200, seed: 20261129, engine: store });
      expect(s.failures).toEqual([]);
      expect(s.violations).toBe(0);
    }, 120_000);
  }

  it("npm run chaos -- --break lossy-keys exits 1 and names what merged (I1, I4 or I5), with its replay", async () => {
    const started = Date.now();
    let out: { code: number; stdout: string };
    try {
      const r = await run(
        "npx",
        [
          "tsx",
          "src/cli/chaos.ts",
          "--histories",
          "50",
          "--seed",
          "20261129",
          "--break",
          "lossy-keys",
          "--json",
        ],
        { cwd: process.cwd() },
      );
      out = { code: 0, stdout: r.stdout };
    } catch (error) {
      out = error as { code: number; stdout: string };
    }
    expect(out.code).toBe(1);
    const report = JSON.parse(out.stdout) as {
      violations: number;
      byInvariant: Record<string, number>;
      replays: string[];
    };
    expect(report.violations).toBeGreaterThan(0);
    expect(Object.keys(report.byInvariant).some((i) => ["I1", "I4", "I5"].includes(i))).toBe(true);
    expect(report.replays[0]).toMatch(/--replay \d+ --break lossy-keys/);
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 90_000);
});
