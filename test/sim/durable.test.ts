import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runCampaign } from "../../src/sim/campaign.js";

const run = promisify(execFile);

/**
 * Durable histories (src/sim/durable-history.ts): the dispatcher, executions replayed in any order, steps crashing
 * between effect and checkpoint, repeated step names, `stop`. Clean on the in-process engines; markers keyed by step
 * name (the bug of repeated step names, `--break step-name-markers`) caught by `npm run chaos`.
 */
describe("durable histories", () => {
  for (const store of ["memory", "sqlite"] as const) {
    it(`${store}: 100 histories, no violations, every fault kind drawn`, async () => {
      const s = await runCampaign({ histories: 100, seed: 20261129, engine: store, durable: true });
      expect(s.failures).toEqual([]);
      expect(s.violations).toBe(0);
      expect(s.states).toBe(100);
      for (const kind of ["crash-before-checkpoint", "second-execution", "stop"])
        expect(s.faults[kind as keyof typeof s.faults]).toBeGreaterThan(0);
    }, 180_000);
  }

  it("npm run chaos catches markers keyed by step name (I1: a second charge answered duplicate, never applied)", async () => {
    const args = ["tsx", "src/cli/chaos.ts", "--durable", "--break", "step-name-markers"];
    const out = await run("npx", [...args, "--histories", "50", "--seed", "20261129", "--json"]).catch(
      (error: { code: number; stdout: string }) => error,
    );
    expect("code" in out ? out.code : 0).toBe(1);
    const report = JSON.parse(out.stdout);
    expect(report.violations).toBeGreaterThan(0);
    expect(Object.keys(report.byInvariant)).toContain("I1");
    expect(report.replays[0]).toMatch(/--durable --break step-name-markers$/);
    const replay = await run("npx", [...args, "--replay", String(report.replays[0].split(" ")[5])]).catch(
      (error: { code: number; stdout: string }) => error,
    );
    expect("code" in replay ? replay.code : 0).toBe(1);
    expect(replay.stdout).toMatch(/VIOLATION I1 .*charge\) answered duplicate, never applied/);
  }, 180_000);
});
