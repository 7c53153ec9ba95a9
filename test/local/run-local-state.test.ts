import { execFileSync } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/cli/run/run-handler.js";
import { eonce } from "./cli-helpers.js";

/**
 * `eonce run --state-store postgres|valkey` (postgres with `--inline` too) with no server URL starts a server of the run's own
 * (src/cli/run/local-state.ts), and a run on those engines starts no DynamoDB Local: a Java that does not exist is
 * never asked for. The handler gets the URL as DATABASE_URL or VALKEY_URL, the checks read the state there.
 */
const NO_URLS = { DATABASE_URL: undefined, VALKEY_URL: undefined, PGHOST: undefined, PGPORT: undefined };

/** A PATH with the machine's Valkey or Redis server binary and no Java: a run that wanted DynamoDB Local fails. */
function pathWithoutJava(): string {
  const dir = mkdtempSync(join(tmpdir(), "eonce-no-java-"));
  for (const name of ["valkey-server", "redis-server"]) {
    try {
      const at = execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
      if (at) symlinkSync(at, join(dir, name));
    } catch {
      // not installed
    }
  }
  return dir;
}
const PATH = pathWithoutJava();

async function runOwn(kind: string, flags: string[]): Promise<RunReport> {
  const args = ["run", "test/local/fixtures/state-engines.ts:handler", "--generate", "6", "--reupload", "3"];
  const fixture = ["--env", `FIXTURE_STORE=${kind}`, "--env", "LEASE_MS=1000"];
  // No Java on the PATH: a run that started DynamoDB Local would fail its preflight naming it.
  const run = await eonce([...args, ...fixture, ...flags, "--json"], 120_000, { ...NO_URLS, PATH });
  if (!run.stdout.trim())
    throw new Error(`eonce run wrote no report (exit ${run.code}): ${run.stderr.trim()}`);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as RunReport;
}

// Side by side: each run starts a server of its own, on its own port.
describe.concurrent("eonce run on a state server of its own", () => {
  it.each([
    ["postgres", ["--state-store", "postgres"]],
    ["postgres-inline", ["--state-store", "postgres", "--inline", "--state-table", "photos"]],
    ["valkey", ["--state-store", "valkey", "--key-prefix", "own:"]],
  ])(
    "%s with no URL: starts it, no DynamoDB Local; the run is exact and its state read",
    async (kind, flags) => {
      const report = await runOwn(kind, flags);
      expect(report.ok).toBe(true);
      const states = report.invariants.filter((i) => i.id === "I2" || i.id === "I3");
      expect(states.map((i) => i.status)).toEqual(["pass", "pass"]);
    },
  );
});
