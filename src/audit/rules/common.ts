import { type Finding, finding, type RuleId } from "../findings.js";
import type { Resolved } from "../resolve.js";
import { numberProperty, type Resource, type TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";

/** A rule reads the model and returns its findings; it never throws on a malformed template. */
export type { Finding };

/** The warning for a reference a check needed and could not follow: the check is skipped, not guessed. */
export function unresolved(
  from: Resource,
  at: string,
  r: Exclude<Resolved, { kind: "resource" }>,
  skipped: string,
): Finding {
  const reason =
    r.kind === "outside" ? "names no resource in this template" : "cannot be resolved before deployment";
  return finding("unresolved-reference", from.id, `${at} ${r.text} ${reason}: ${skipped} not checked`);
}

/** Seconds as people write them: `180 s`, `1.5 s`. */
export function seconds(n: number): string {
  return `${Number.isInteger(n) ? n : n.toFixed(1)} s`;
}

/**
 * A stream mapping's bound that Lambda leaves unbounded by default (`property` missing or -1): each such mapping is a
 * `rule` finding saying what follows (`consequence`); a value not known before deployment is not checked.
 */
export function unboundedStreamSetting(
  model: TemplateModel,
  property: "MaximumRetryAttempts" | "MaximumRecordAgeInSeconds",
  rule: RuleId,
  consequence: string,
): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const value = numberProperty(esm.properties[property], -1);
    if (!value.known) {
      const message = `${esm.id}.${property} ${value.text} is not known before deployment: not checked`;
      return [finding("unresolved-reference", esm.id, message)];
    }
    if (value.value !== -1) return [];
    const what =
      esm.properties[property] === undefined ? `has no ${property} (default -1)` : `has ${property} -1`;
    return [
      finding(rule, esm.id, `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} ${what}: ${consequence}`),
    ];
  });
}
