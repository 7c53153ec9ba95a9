import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

async function chaos(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("npx", ["tsx", "src/cli/chaos.ts", ...args], { cwd: process.cwd() });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("npm run chaos", () => {
  it("prints the JSON summary and exits 0 without violations", async () => {
    const r = await chaos(["--histories", "20", "--seed", "1", "--json"]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ histories: 20, violations: 0, states: 20 });
    expect(Object.keys(out.faults).length).toBeGreaterThan(0);
  }, 60_000);

  it("exits 1 on a violation and prints the command that replays it", async () => {
    // A store whose commit answers "committed" without writing: history 4 acknowledges what nobody committed.
    const r = await chaos(["--histories", "1", "--seed", "4", "--break", "lying-commit", "--json"]);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.violations).toBe(1);
    expect(out.replays).toEqual(["npm run chaos -- --replay 4 --break lying-commit"]);
    const replay = await chaos(["--replay", "4", "--break", "lying-commit"]);
    expect(replay.code).toBe(1);
    expect(replay.stdout).toContain("VIOLATION I4");
  }, 60_000);

  it("selects the engine with --engine (--store, its old name, still works) and its inline mode with --inline", async () => {
    const r = await chaos(["--engine", "sqlite", "--histories", "3", "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ engine: "sqlite", histories: 3, violations: 0 });
    const old = await chaos(["--store", "sqlite", "--histories", "3", "--json"]);
    expect(JSON.parse(old.stdout)).toMatchObject({ engine: "sqlite", histories: 3 });
    const noMode = await chaos(["--engine", "sqlite", "--inline", "--histories", "1"]);
    expect(noMode.code).toBe(2);
    expect(noMode.stderr).toContain("--inline: the sqlite engine has no inline mode (dynamodb, postgres)");
    // A row mapping's break needs the inline mode, as the deprecated -inline names give it.
    const rows = await chaos(["--engine", "dynamodb", "--break", "colliding-row-keys", "--histories", "1"]);
    expect(rows.code).toBe(2);
    expect(rows.stderr).toContain("needs --inline");
  }, 120_000);
});
