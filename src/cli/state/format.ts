import { describeLease, formatDuration, type StateView } from "./view.js";

/** `eonce state get`'s human output: one field a line. */
export function formatRecord(v: StateView, subject?: string): string {
  const ago = (ms: number | null) => (ms === null ? "" : ` (${formatDuration(ms)} ago)`);
  const size = (bytes: number | null) => (bytes === null ? undefined : `${bytes} bytes`);
  const rows: [string, string | undefined][] = [
    ["key", v.key],
    ["subject", subject],
    ["status", v.status],
    ["position", v.position || '"" (unordered)'],
    ["identity", v.identity],
    ["fence", String(v.fence)],
    ["claimed", v.claimedAt === null ? "unknown (fence not from a clock)" : `${v.claimedAt}${ago(v.ageMs)}`],
    ["lease", describeLease(v) + (v.leaseUntil ? ` (until ${v.leaseUntil})` : "")],
    ["committed", v.committedPosition === null ? "none" : `position ${v.committedPosition || '""'}`],
    ["committed id", v.committedIdentity ?? undefined],
    ["result", size(v.resultBytes) ?? (v.resultOmittedBytes === null ? "none" : undefined)],
    ["result omitted", size(v.resultOmittedBytes)],
    ["fingerprint", v.committedFingerprint ?? undefined],
    ["attempts", String(v.attempts)],
    ["expires", v.expiresAt === null ? "never" : `${v.expiresAt} (${expiresIn(v.expiresInMs ?? 0)})`],
    ["token", v.token ?? "none"],
  ];
  const shown = rows.filter((r): r is [string, string] => r[1] !== undefined);
  const width = Math.max(...shown.map(([name]) => name.length));
  return shown.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join("\n");
}

function expiresIn(ms: number): string {
  return ms >= 0 ? `in ${formatDuration(ms)}` : `${formatDuration(ms)} ago: due for deletion`;
}

/**
 * `eonce state list`'s human output: a table, held or stuck records first (the order they came in). `last` names
 * the last column: `ROW` when the records are named by their inline row (a custom row mapping without its inverse).
 */
export function formatTable(views: readonly StateView[], last: "KEY" | "ROW" = "KEY"): string {
  if (views.length === 0) return "no records";
  const header = ["STATUS", "LEASE", "AGE", "ATTEMPTS", "FENCE", "POSITION", last];
  const rows = views.map((v) => [
    v.status,
    v.status === "running" ? describeLease(v) : "-",
    v.ageMs === null ? "?" : formatDuration(v.ageMs),
    String(v.attempts),
    String(v.fence),
    v.position || '""',
    v.key,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
