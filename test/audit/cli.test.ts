import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { registerAudit } from "../../src/cli/audit.js";
import { auditTemplateFile, auditTemplateText, registerAuditTemplate } from "../../src/cli/audit-template.js";
import { OptionsError } from "../../src/core/errors.js";

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

describe("eonce audit template: suppressions", () => {
  const guardless = join(fixtures, "s3-no-guard-table.yaml");

  it("--ignore <rule>=<reason>: printed under suppressed with its reason, not counted (exit 0)", async () => {
    const r = await run(guardless, "--ignore", "s3-no-guard-table=the guard's state is in PostgreSQL");
    expect(r.exitCode).toBe(0);
    const blocks = r.stdout.trim().split("\n\n");
    expect(blocks).toEqual([
      "suppressed (not counted in the exit code):",
      expect.stringMatching(
        /^error s3-no-guard-table Uploads\n {2}Uploads sends S3 events .*\n {2}suppressed by --ignore: the guard's state is in PostgreSQL$/,
      ),
      expect.stringMatching(/s3-no-guard-table\.yaml: 0 errors, 0 warnings, 1 suppressed$/),
    ]);
  });

  it("--ignore without a reason says so; the flag repeats", async () => {
    const lock = join(fixtures, "s3-sequencer-lock.yaml");
    const r = await run(
      lock,
      "--ignore",
      "hand-made-lock-table",
      "--ignore",
      "async-no-on-failure=DLQ added by an aspect",
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("suppressed by --ignore: (no reason given)");
    expect(r.stdout).toContain("suppressed by --ignore: DLQ added by an aspect");
    expect(r.stdout.trimEnd()).toMatch(/0 errors, 0 warnings, 2 suppressed$/);
  });

  it("an error still counts when another rule is suppressed", async () => {
    const r = await run(join(fixtures, "s3-sequencer-lock.yaml"), "--ignore", "async-no-on-failure");
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toMatch(/^error hand-made-lock-table ObjectLocks/);
  });

  it("--json adds suppressed, reason and suppressedBy to the suppressed findings only", async () => {
    const lock = join(fixtures, "s3-sequencer-lock.yaml");
    const r = await run(lock, "--json", "--ignore", "async-no-on-failure");
    expect(r.exitCode).toBe(1);
    const findings = JSON.parse(r.stdout) as Record<string, unknown>[];
    expect(Object.keys(findings[0]!).sort()).toEqual([
      "fix",
      "message",
      "resource",
      "rule",
      "severity",
      "why",
    ]);
    expect(findings[1]).toMatchObject({
      rule: "async-no-on-failure",
      suppressed: true,
      reason: null,
      suppressedBy: "--ignore",
    });
  });

  it("template metadata suppresses without a flag", async () => {
    const r = await run(join(fixtures, "suppressed-cdk-nag.json"));
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain(
      "suppressed by cdk_nag metadata on UploadsNotifications: The guard's state is in PostgreSQL",
    );
  });

  it("an unknown rule id is a usage error (exit 2) listing the valid ids, checked before the template is read", async () => {
    const r = await run(join(dir, "missing.yaml"), "--ignore", "s3-no-guard");
    expect(r).toMatchObject({ exitCode: 2, stdout: "" });
    expect(r.stderr).toMatch(/--ignore: unknown rule "s3-no-guard" \(rules: .*s3-no-guard-table.*\)/);
    expect(r.stderr).not.toMatch(/cannot read/);
  });

  it("--ignore-file: one suppression a line; a bad line or a missing file is exit 2", async () => {
    const file = join(dir, "ignores.txt");
    writeFileSync(file, "# PostgreSQL guard\ns3-no-guard-table=state in PostgreSQL\n");
    const ok = await run(guardless, "--ignore-file", file);
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toContain(`suppressed by ${file}:2: state in PostgreSQL`);
    writeFileSync(file, "s3-no-guard-table\nsqs-no-dql\n");
    const bad = await run(guardless, "--ignore-file", file);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain(`${file}:2: unknown rule "sqs-no-dql"`);
    const missing = await run(guardless, "--ignore-file", join(dir, "nope.txt"));
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/--ignore-file: cannot read .*nope\.txt/);
  });

  it("an unusable suppression in the template's metadata is exit 2, naming where it is", async () => {
    const file = join(dir, "bad-metadata.json");
    const metadata = { cdk_nag: { rules_to_suppress: [{ id: "s3-no-guard-table" }] } };
    writeFileSync(
      file,
      JSON.stringify({ Resources: { B: { Type: "AWS::S3::Bucket", Metadata: metadata } } }),
    );
    const r = await run(file);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(
      "Resources.B.Metadata.cdk_nag.rules_to_suppress[0]: s3-no-guard-table needs a reason",
    );
  });

  it("auditTemplateFile and auditTemplateText reject unknown options and ill-typed values", async () => {
    await expect(auditTemplateFile(guardless, { ignor: ["x"] } as never)).rejects.toThrow(OptionsError);
    await expect(auditTemplateFile(guardless, { ignore: "sqs-no-dlq" } as never)).rejects.toThrow(
      /ignore must be/,
    );
    expect(() => auditTemplateText("Resources: {}", { jsn: true } as never)).toThrow(/unknown option "jsn"/);
  });
});
