import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import {
  auditTemplateReport,
  type Finding,
  parseIgnore,
  parseIgnoreFile,
  type SuppressedFinding,
  type Suppression,
  SuppressionError,
  TemplateLoadError,
} from "../audit/index.js";
import { describeError } from "../core/describe-value.js";
import * as opt from "../core/options.js";

/** 0: no error (warnings allowed); 1: at least one error finding; 2: unreadable template or usage error. */
export type AuditExitCode = 0 | 1 | 2;

export interface AuditTemplateResult {
  stdout: string;
  stderr?: string;
  exitCode: AuditExitCode;
  /** The findings that count. */
  findings: Finding[];
  /** The findings a suppression covers: printed, not counted. */
  suppressed: SuppressedFinding[];
}

export interface AuditTemplateTextOptions {
  json?: boolean;
  /** The template's name in the summary and errors. Default `template`. */
  name?: string;
  /** Suppressions from the command line (`parseIgnore`, `parseIgnoreFile`), after the template's own. */
  suppressions?: readonly Suppression[];
}

const TEXT_OPTIONS = opt.schemaFor<AuditTemplateTextOptions>()({
  json: opt.boolean(),
  name: opt.string(),
  suppressions: opt.custom<readonly Suppression[]>(
    "a list of suppressions (from parseIgnore)",
    Array.isArray,
  ),
});

const failed = (stderr: string): AuditTemplateResult => ({
  stdout: "",
  stderr: `eonce audit template: ${stderr}`,
  exitCode: 2,
  findings: [],
  suppressed: [],
});

/** The logic of `eonce audit template` without I/O: the template's text in, the report out. */
export function auditTemplateText(text: string, options: AuditTemplateTextOptions = {}): AuditTemplateResult {
  const o = opt.resolveOptions("auditTemplateText", TEXT_OPTIONS, options);
  const name = o.name ?? "template";
  let report: { findings: Finding[]; suppressed: SuppressedFinding[] };
  try {
    report = auditTemplateReport(text, { ignore: o.suppressions ?? [] });
  } catch (e) {
    if (!(e instanceof TemplateLoadError || e instanceof SuppressionError)) throw e;
    return failed(`${name}: ${e.message}`);
  }
  const { findings, suppressed } = report;
  const exitCode = findings.some((f) => f.severity === "error") ? 1 : 0;
  const stdout = o.json
    ? JSON.stringify([...findings, ...suppressed], null, 2)
    : formatFindings(findings, name, suppressed);
  return { stdout, exitCode, findings, suppressed };
}

/**
 * One block per finding (severity, rule, resource; message; why; fix), then the suppressed ones under their own
 * heading (severity, rule, resource; message; what suppressed it and why), then one summary line.
 */
export function formatFindings(
  findings: Finding[],
  name: string,
  suppressed: SuppressedFinding[] = [],
): string {
  const blocks = findings.map((f) =>
    [`${f.severity} ${f.rule} ${f.resource}`, `  ${f.message}`, `  why: ${f.why}`, `  fix: ${f.fix}`].join(
      "\n",
    ),
  );
  if (suppressed.length > 0) {
    blocks.push("suppressed (not counted in the exit code):");
    for (const f of suppressed) {
      const reason = f.reason ?? "(no reason given)";
      blocks.push(
        `${f.severity} ${f.rule} ${f.resource}\n  ${f.message}\n  suppressed by ${f.suppressedBy}: ${reason}`,
      );
    }
  }
  return [...blocks, summary(findings, suppressed, name)].join("\n\n");
}

function summary(findings: Finding[], suppressed: SuppressedFinding[], name: string): string {
  const errors = findings.filter((f) => f.severity === "error").length;
  const warnings = findings.length - errors;
  const count = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const more = suppressed.length > 0 ? `, ${suppressed.length} suppressed` : "";
  return `${name}: ${count(errors, "error")}, ${count(warnings, "warning")}${more}`;
}

export interface AuditTemplateFileOptions {
  json?: boolean;
  /** `<rule-id>[=<reason>]` texts, as `--ignore` takes them. */
  ignore?: readonly string[];
  /** A file of `<rule-id>[=<reason>]` lines, as `--ignore-file` takes it. */
  ignoreFile?: string;
}

const FILE_OPTIONS = opt.schemaFor<AuditTemplateFileOptions>()({
  json: opt.boolean(),
  ignore: opt.custom<readonly string[]>(
    "a list of <rule-id>[=<reason>] strings",
    (v) => Array.isArray(v) && v.every((s) => typeof s === "string"),
  ),
  ignoreFile: opt.string(),
});

/**
 * Checks the suppressions given (`--ignore`, `--ignore-file`) before the template is read, then reads it and runs
 * {@link auditTemplateText}. An unusable suppression or an unreadable file is exit code 2.
 */
export async function auditTemplateFile(
  path: string,
  options: AuditTemplateFileOptions = {},
): Promise<AuditTemplateResult> {
  const o = opt.resolveOptions("auditTemplateFile", FILE_OPTIONS, options);
  let suppressions: Suppression[];
  try {
    suppressions = [...(o.ignore ?? []).map((t) => parseIgnore(t)), ...(await readIgnoreFile(o.ignoreFile))];
  } catch (e) {
    if (!(e instanceof SuppressionError)) throw e;
    return failed(e.message);
  }
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    return failed(`cannot read ${path}: ${describeError(e)}`);
  }
  return auditTemplateText(text, { json: o.json, name: path, suppressions });
}

async function readIgnoreFile(file: string | undefined): Promise<Suppression[]> {
  if (file === undefined) return [];
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    throw new SuppressionError("--ignore-file", `cannot read ${file}: ${describeError(e)}`, { cause: e });
  }
  return parseIgnoreFile(text, file);
}

// No default list: commander would print "(default: [])" in the help.
const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `eonce audit template <file> [--json] [--ignore <rule-id>[=<reason>]]… [--ignore-file <path>]`. */
export function registerAuditTemplate(audit: Command): Command {
  return audit
    .command("template")
    .description(
      "check a CloudFormation, SAM or CDK-synthesized template (JSON or YAML) for the failure modes that cause duplicate, lost or stale effects",
    )
    .argument("<file>", "the template (cdk.out/<Stack>.template.json, template.yaml)")
    .option(
      "--json",
      "print the findings as a JSON array of {rule, severity, resource, message, why, fix}; suppressed ones add {suppressed, reason, suppressedBy}",
    )
    .option(
      "--ignore <rule-id[=reason]>",
      "suppress a rule across the template: printed, not counted (repeatable)",
      collect,
    )
    .option("--ignore-file <path>", "a file of <rule-id>[=<reason>] lines to suppress (# comments)")
    .addHelpText(
      "after",
      "\nExit codes: 0 no error finding, 1 error findings, 2 unreadable template or usage error (an unknown rule id).",
    )
    .action(async (file: string, options: AuditTemplateFileOptions) => {
      const { json, ignore, ignoreFile } = options;
      const result = await auditTemplateFile(file, { json, ignore, ignoreFile });
      if (result.stdout) process.stdout.write(`${result.stdout}\n`);
      if (result.stderr) process.stderr.write(`${result.stderr}\n`);
      process.exitCode = result.exitCode;
    });
}
