import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { auditTemplate, type Finding, TemplateLoadError } from "../audit/index.js";
import { describeError } from "../core/describe-value.js";

/** 0: no error (warnings allowed); 1: at least one error finding; 2: the template is unreadable. */
export type AuditExitCode = 0 | 1 | 2;

export interface AuditTemplateResult {
  stdout: string;
  stderr?: string;
  exitCode: AuditExitCode;
  findings: Finding[];
}

/** The logic of `eonce audit template` without I/O: the template's text in, the report out. */
export function auditTemplateText(
  text: string,
  options: { json?: boolean; name?: string } = {},
): AuditTemplateResult {
  const name = options.name ?? "template";
  let findings: Finding[];
  try {
    findings = auditTemplate(text);
  } catch (e) {
    if (!(e instanceof TemplateLoadError)) throw e;
    return { stdout: "", stderr: `eonce audit template: ${name}: ${e.message}`, exitCode: 2, findings: [] };
  }
  const exitCode = findings.some((f) => f.severity === "error") ? 1 : 0;
  const stdout = options.json ? JSON.stringify(findings, null, 2) : formatFindings(findings, name);
  return { stdout, exitCode, findings };
}

/** One block per finding (severity, rule, resource; message; why; fix), then one summary line. */
export function formatFindings(findings: Finding[], name: string): string {
  const blocks = findings.map((f) =>
    [`${f.severity} ${f.rule} ${f.resource}`, `  ${f.message}`, `  why: ${f.why}`, `  fix: ${f.fix}`].join(
      "\n",
    ),
  );
  return [...blocks, summary(findings, name)].join("\n\n");
}

function summary(findings: Finding[], name: string): string {
  const errors = findings.filter((f) => f.severity === "error").length;
  const warnings = findings.length - errors;
  const count = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return `${name}: ${count(errors, "error")}, ${count(warnings, "warning")}`;
}

/** Reads the file, then {@link auditTemplateText}; a file that cannot be read is exit code 2. */
export async function auditTemplateFile(
  path: string,
  options: { json?: boolean } = {},
): Promise<AuditTemplateResult> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    return {
      stdout: "",
      stderr: `eonce audit template: cannot read ${path}: ${describeError(e)}`,
      exitCode: 2,
      findings: [],
    };
  }
  return auditTemplateText(text, { ...options, name: path });
}

/** `eonce audit template <file> [--json]`. */
export function registerAuditTemplate(audit: Command): Command {
  return audit
    .command("template")
    .description(
      "check a CloudFormation, SAM or CDK-synthesized template (JSON or YAML) for the failure modes that cause duplicate, lost or stale effects",
    )
    .argument("<file>", "the template (cdk.out/<Stack>.template.json, template.yaml)")
    .option("--json", "print the findings as a JSON array of {rule, severity, resource, message, why, fix}")
    .action(async (file: string, options: { json?: boolean }) => {
      const result = await auditTemplateFile(file, options);
      if (result.stdout) process.stdout.write(`${result.stdout}\n`);
      if (result.stderr) process.stderr.write(`${result.stderr}\n`);
      process.exitCode = result.exitCode;
    });
}
