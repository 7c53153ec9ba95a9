/**
 * `eonce audit template`'s checks as a library: a CloudFormation, SAM or CDK-synthesized template in, the seed
 * failure modes it shows out (docs/cli-audit-template.md lists the rules).
 */
import { auditModel } from "./audit.js";
import type { Finding } from "./findings.js";
import { parseTemplate } from "./load.js";
import { lowerSam } from "./sam.js";
import { TemplateModel } from "./template.js";

export { auditModel } from "./audit.js";
export { type Finding, RULES, type RuleId, type Severity } from "./findings.js";
export { parseTemplate, TemplateLoadError } from "./load.js";
export { TemplateModel } from "./template.js";

/** The findings of one template's text (JSON or YAML). Throws TemplateLoadError when it is not a template. */
export function auditTemplate(text: string): Finding[] {
  return auditModel(TemplateModel.fromTemplate(lowerSam(parseTemplate(text))));
}
