/**
 * `eonce audit template`'s checks as a library: a CloudFormation, SAM or CDK-synthesized template in, the seed
 * failure modes it shows out (docs/cli-audit-template.md lists the rules).
 */
import * as opt from "../core/options.js";
import { auditModel } from "./audit.js";
import type { Finding } from "./findings.js";
import { parseTemplate } from "./load.js";
import { lowerSam } from "./sam.js";
import {
  applySuppressions,
  type Suppression,
  type SuppressionResult,
  templateSuppressions,
} from "./suppress.js";
import { isObject, TemplateModel } from "./template.js";

export { auditModel } from "./audit.js";
export { type Finding, RULES, type RuleId, type Severity } from "./findings.js";
export { parseTemplate, TemplateLoadError } from "./load.js";
export {
  applySuppressions,
  parseIgnore,
  parseIgnoreFile,
  type SuppressedFinding,
  type Suppression,
  SuppressionError,
  type SuppressionResult,
  templateSuppressions,
} from "./suppress.js";
export { TemplateModel } from "./template.js";

export interface TemplateAuditOptions {
  /** Suppressions from outside the template (`parseIgnore`, `parseIgnoreFile`), after the template's own. */
  ignore?: readonly Suppression[];
}

const isSuppression = (v: unknown) =>
  isObject(v) && typeof v.rule === "string" && typeof v.source === "string";

export const TEMPLATE_AUDIT_OPTIONS = opt.schemaFor<TemplateAuditOptions>()({
  ignore: opt.custom<readonly Suppression[]>(
    "a list of suppressions (from parseIgnore)",
    (v) => Array.isArray(v) && v.every(isSuppression),
  ),
});

/**
 * The findings of one template's text (JSON or YAML), split into those that count and those the template's
 * metadata or `options.ignore` suppress. Throws TemplateLoadError when it is not a template, SuppressionError when
 * a suppression in it is unusable (checked before any rule runs), OptionsError for bad options.
 */
export function auditTemplateReport(text: string, options: TemplateAuditOptions = {}): SuppressionResult {
  const o = opt.resolveOptions("auditTemplate", TEMPLATE_AUDIT_OPTIONS, options);
  const model = TemplateModel.fromTemplate(lowerSam(parseTemplate(text)));
  const suppressions = [...templateSuppressions(model), ...(o.ignore ?? [])];
  return applySuppressions(auditModel(model), suppressions);
}

/** The findings that count (see {@link auditTemplateReport}). */
export function auditTemplate(text: string, options: TemplateAuditOptions = {}): Finding[] {
  return auditTemplateReport(text, options).findings;
}
