import { type Finding, finding } from "../findings.js";
import type { Resolved } from "../resolve.js";
import type { Resource } from "../template.js";

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
