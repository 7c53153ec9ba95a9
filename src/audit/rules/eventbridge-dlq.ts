import { finding } from "../findings.js";
import { asObject, type TemplateModel } from "../template.js";
import { ruleTargets } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule eventbridge-target-no-dlq: every target of every rule has a DeadLetterConfig. */
export function checkEventBridgeDlq(model: TemplateModel): Finding[] {
  return ruleTargets(model)
    .filter((t) => asObject(t.settings.DeadLetterConfig).Arn === undefined)
    .map((t) => {
      const id = typeof t.settings.Id === "string" ? ` (${t.settings.Id})` : "";
      const message = `rule ${t.from.id} target ${t.index}${id} has no DeadLetterConfig`;
      return finding("eventbridge-target-no-dlq", t.from.id, message);
    });
}
