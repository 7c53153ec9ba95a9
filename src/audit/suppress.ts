import { describeValue } from "../core/describe-value.js";
import { EffectivelyOnceError } from "../core/errors.js";
import { type Finding, RULES, type RuleId } from "./findings.js";
import { isObject, type Json, type TemplateModel } from "./template.js";

/**
 * A suppression that cannot be used: an unknown rule id, a cdk-nag entry without a reason, metadata of the wrong
 * shape, an ignore file that cannot be read. `source` says where it was written (`--ignore`, `ignores.txt:3`,
 * `Resources.Uploads.Metadata.cdk_nag.rules_to_suppress[0]`).
 */
export class SuppressionError extends EffectivelyOnceError {
  readonly source: string;
  constructor(source: string, message: string, options?: { cause?: unknown }) {
    super(`${source}: ${message}`, options);
    this.source = source;
  }
}

/** One rule switched off, for one resource or the whole template. */
export interface Suppression {
  readonly rule: RuleId;
  /** The logical id whose findings it covers; undefined: every finding of the rule. */
  readonly resource?: string;
  /** Why; null when none was given (allowed for cfn-lint's ignore_checks and --ignore). */
  readonly reason: string | null;
  /** Where it was written, for the report: `--ignore`, `cdk_nag metadata on Uploads`. */
  readonly source: string;
}

/** A finding a suppression covers: printed, not counted. */
export interface SuppressedFinding extends Finding {
  suppressed: true;
  reason: string | null;
  suppressedBy: string;
}

export interface SuppressionResult {
  /** The findings that count. */
  findings: Finding[];
  suppressed: SuppressedFinding[];
}

const RULE_IDS = Object.keys(RULES) as RuleId[];

function ruleId(id: string, source: string): RuleId {
  if ((RULE_IDS as string[]).includes(id)) return id as RuleId;
  throw new SuppressionError(source, `unknown rule ${describeValue(id)} (rules: ${RULE_IDS.join(", ")})`);
}

/** `<rule-id>[=<reason>]`, as `--ignore` and each line of an ignore file take it: the whole template. */
export function parseIgnore(text: string, source = "--ignore"): Suppression {
  const eq = text.indexOf("=");
  const id = (eq === -1 ? text : text.slice(0, eq)).trim();
  const reason = eq === -1 ? null : text.slice(eq + 1).trim();
  if (reason === "")
    throw new SuppressionError(
      source,
      `${describeValue(text)}: empty reason after "=" (leave "=" out for none)`,
    );
  return { rule: ruleId(id, source), reason, source };
}

/** An ignore file: one `<rule-id>[=<reason>]` a line; blank lines and lines starting with `#` are skipped. */
export function parseIgnoreFile(text: string, name: string): Suppression[] {
  return text.split(/\r?\n/).flatMap((line, i) => {
    const body = line.trim();
    return body === "" || body.startsWith("#") ? [] : [parseIgnore(body, `${name}:${i + 1}`)];
  });
}

/**
 * cdk_nag and cfn-lint metadata hold those tools' rules too (`AwsSolutions-IAM5`, `W3005`): they are left to
 * their tool. An id in our shape (lowercase words and hyphens), or ours in another case, must be one of ours.
 */
function isOurs(id: string): boolean {
  return /^[a-z0-9.]+(-[a-z0-9.]+)+$/.test(id) || RULE_IDS.some((r) => r === id.toLowerCase());
}

/**
 * The suppressions written in the template: each resource's Metadata (covering that resource's findings) first,
 * then the template's own Metadata (covering all of them). cdk-nag's shape,
 * `cdk_nag: { rules_to_suppress: [{ id, reason }] }`, and cfn-lint's, `cfn-lint: { config: { ignore_checks: [id] } }`.
 */
export function templateSuppressions(model: TemplateModel): Suppression[] {
  const out: Suppression[] = [];
  for (const r of model.resources.values()) {
    out.push(...metadataSuppressions(r.metadata, `Resources.${r.id}.Metadata`, r.id));
  }
  out.push(...metadataSuppressions(model.metadata, "Metadata", undefined));
  return out;
}

function metadataSuppressions(metadata: Json, path: string, resource: string | undefined): Suppression[] {
  const on = resource === undefined ? "of the template" : `on ${resource}`;
  const cdkNag = cdkNagSuppressions(metadata.cdk_nag, `${path}.cdk_nag`);
  const cfnLint = cfnLintIgnores(metadata["cfn-lint"], `${path}.cfn-lint`);
  return [
    ...cdkNag.map((s) => ({ ...s, resource, source: `cdk_nag metadata ${on}` })),
    ...cfnLint.map((rule) => ({ rule, resource, reason: null, source: `cfn-lint metadata ${on}` })),
  ];
}

function mapping(value: unknown, path: string): Json {
  if (isObject(value)) return value;
  throw new SuppressionError(path, `must be a mapping, got ${describeValue(value)}`);
}

function list(value: unknown, path: string): unknown[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) return value;
  throw new SuppressionError(path, `must be a list, got ${describeValue(value)}`);
}

function cdkNagSuppressions(value: unknown, path: string): { rule: RuleId; reason: string }[] {
  if (value === undefined) return [];
  const entries = list(mapping(value, path).rules_to_suppress, `${path}.rules_to_suppress`);
  return entries.flatMap((entry, i) => {
    const at = `${path}.rules_to_suppress[${i}]`;
    const e = mapping(entry, at);
    if (typeof e.id !== "string")
      throw new SuppressionError(at, `id must be a string, got ${describeValue(e.id)}`);
    if (!isOurs(e.id)) return [];
    return [{ rule: ruleId(e.id, at), reason: cdkNagReason(e, at) }];
  });
}

/** cdk-nag's own checks: a reason of 10 characters or more; base64 when cdk-nag marked it is_reason_encoded. */
function cdkNagReason(entry: Json, at: string): string {
  for (const key of Object.keys(entry)) {
    if (key === "applies_to")
      throw new SuppressionError(
        at,
        "applies_to is not supported for eonce rules: suppress the rule on the resource",
      );
    if (!["id", "reason", "is_reason_encoded"].includes(key))
      throw new SuppressionError(
        at,
        `unknown key ${describeValue(key)} (allowed: id, reason, is_reason_encoded)`,
      );
  }
  if (typeof entry.reason !== "string")
    throw new SuppressionError(at, `${entry.id} needs a reason (cdk-nag's shape requires one)`);
  const reason = (
    entry.is_reason_encoded === true ? Buffer.from(entry.reason, "base64").toString("utf8") : entry.reason
  ).trim();
  if (reason.length < 10)
    throw new SuppressionError(
      at,
      `reason ${describeValue(reason)} is under 10 characters (cdk-nag's minimum)`,
    );
  return reason;
}

function cfnLintIgnores(value: unknown, path: string): RuleId[] {
  if (value === undefined) return [];
  const config = mapping(value, path).config;
  if (config === undefined) return [];
  const checks = list(mapping(config, `${path}.config`).ignore_checks, `${path}.config.ignore_checks`);
  return checks.flatMap((id, i) => {
    const at = `${path}.config.ignore_checks[${i}]`;
    if (typeof id !== "string") throw new SuppressionError(at, `must be a rule id, got ${describeValue(id)}`);
    return isOurs(id) ? [ruleId(id, at)] : [];
  });
}

/**
 * Splits findings into those that count and those a suppression covers. The first matching suppression is
 * reported, so list the most specific first (a resource's, then the template's, then the command line's).
 */
export function applySuppressions(
  findings: readonly Finding[],
  suppressions: readonly Suppression[],
): SuppressionResult {
  const result: SuppressionResult = { findings: [], suppressed: [] };
  for (const f of findings) {
    const s = suppressions.find(
      (s) => s.rule === f.rule && (s.resource === undefined || s.resource === f.resource),
    );
    if (s) result.suppressed.push({ ...f, suppressed: true, reason: s.reason, suppressedBy: s.source });
    else result.findings.push(f);
  }
  return result;
}
