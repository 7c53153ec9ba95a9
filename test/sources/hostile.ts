/**
 * Hostile JSON for fuzz and regression tests. Deep values cannot go through JSON.stringify (it overflows the
 * stack), so they are JSON text, spliced into a template where a placeholder string stands.
 */

const HOLE = "\u0000HOLE\u0000";
const HOLE_JSON = JSON.stringify(HOLE);

/** `[[[…1…]]]` nested `depth` levels: about 2 bytes a level, far past JSON.stringify's limit at 100,000. */
export function deepJson(depth: number, leaf = "1", open: "[" | "{" = "["): string {
  return open === "["
    ? `${"[".repeat(depth)}${leaf}${"]".repeat(depth)}`
    : `${'{"a":'.repeat(depth)}${leaf}${"}".repeat(depth)}`;
}

/** A copy of `template` with `valueJson` at `path` (`["s3", "object", "size"]`), as JSON text. */
export function spliceJson(template: unknown, path: readonly (string | number)[], valueJson: string): string {
  const copy = structuredClone(template) as Record<string | number, unknown>;
  let node = copy;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  node[path[path.length - 1] as string | number] = HOLE;
  const text = JSON.stringify(copy);
  const at = text.indexOf(HOLE_JSON);
  return text.slice(0, at) + valueJson + text.slice(at + HOLE_JSON.length);
}

/** Same as spliceJson, parsed (JSON.parse handles any depth). */
export function splice(template: unknown, path: readonly (string | number)[], valueJson: string): unknown {
  return JSON.parse(spliceJson(template, path, valueJson));
}
