import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { registerAudit } from "../../src/cli/audit.js";
import { registerAuditTemplate } from "../../src/cli/audit-template.js";

const fixtures = fileURLToPath(new URL("../fixtures/audit/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "eonce-audit-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `eonce audit template …args` in-process; returns what it printed and its exit code. */
async function run(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const capture = (into: string[]) => (s: string | Uint8Array) => {
    into.push(String(s));
    return true;
  };
  vi.spyOn(process.stdout, "write").mockImplementation(capture(out));
  vi.spyOn(process.stderr, "write").mockImplementation(capture(err));
  const program = new Command("eonce").exitOverride();
  registerAuditTemplate(registerAudit(program));
  process.exitCode = undefined;
  try {
    await program.parseAsync(["node", "eonce", "audit", "template", ...args]);
  } finally {
    vi.restoreAllMocks();
  }
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  return { stdout: out.join(""), stderr: err.join(""), exitCode };
}

afterEach(() => {
  process.exitCode = undefined;
});

describe("eonce audit template", () => {
  it("prints one block per finding and a summary line; exit 1 on an error", async () => {
    const r = await run(join(fixtures, "sqs-visibility-6x.yaml"));
    expect(r.exitCode).toBe(1);
    const blocks = r.stdout.trim().split("\n\n");
    expect(blocks).toHaveLength(2);
    expect(blocks[0]!.split("\n")[0]).toBe("error sqs-visibility-6x OrdersQueue");
    expect(blocks[0]).toMatch(/\n {2}why: .+\n {2}fix: .+VisibilityTimeout/);
    expect(blocks[1]).toMatch(/sqs-visibility-6x\.yaml: 1 error, 0 warnings$/);
  });

  it("--json prints the findings as an array of {rule, severity, resource, message, why, fix}", async () => {
    const r = await run(join(fixtures, "stream-batch-failures.yaml"), "--json");
    expect(r.exitCode).toBe(1);
    const findings = JSON.parse(r.stdout) as Record<string, string>[];
    expect(findings.map((f) => f.resource)).toEqual(["ClicksSource", "ProfilesSource"]);
    for (const f of findings) {
      expect(Object.keys(f).sort()).toEqual(["fix", "message", "resource", "rule", "severity", "why"]);
    }
  });

  it("exit 0 with only warnings", async () => {
    const r = await run(join(fixtures, "fifo-no-dedup.json"));
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/0 errors, 1 warning$/m);
  });

  it("exit 0 and an empty array for a clean template", async () => {
    const file = join(dir, "empty.json");
    writeFileSync(file, JSON.stringify({ Resources: { Q: { Type: "AWS::SQS::Queue" } } }));
    const r = await run(file, "--json");
    expect(r).toMatchObject({ exitCode: 0, stdout: "[]\n" });
  });

  it.each([
    ["a missing file", join(dir, "missing.yaml"), /cannot read/],
    ["a file that is not a template", join(fixtures, "..", "events", "s3-put.json"), /no Resources/],
  ])("exit 2 for %s, the reason on stderr", async (_name, file, message) => {
    const r = await run(file);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(message);
  });

  it("a missing argument is a usage error (commander, exit 2 in main.ts)", async () => {
    await expect(run()).rejects.toMatchObject({ code: "commander.missingArgument" });
  });
});
