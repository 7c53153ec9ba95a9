import type { DemoReport } from "./run-demo.js";

const COLUMNS = [
  ["scenario", (s) => s.name],
  ["guard", (s) => s.guard],
  ["deliveries", (s) => String(s.deliveries)],
  ["events", (s) => String(s.distinctEvents)],
  ["runs", (s) => String(s.handlerRuns)],
  ["duplicate effects", (s) => String(s.duplicateEffects)],
  ["stale results", (s) => String(s.staleResults)],
  ["lost events", (s) => String(s.lostEvents)],
  ["time", (s) => `${(s.durationMs / 1000).toFixed(1)} s`],
] as const satisfies readonly (readonly [string, (s: DemoReport["scenarios"][number]) => string])[];

/** The comparison as a plain-text table (numbers right-aligned), one row per scenario and mode. */
export function formatTable(report: DemoReport): string {
  const rows = report.scenarios.map((s) => COLUMNS.map(([, cell]) => cell(s)));
  const widths = COLUMNS.map(([title], i) => Math.max(title.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const out = [line(COLUMNS.map(([t]) => t)), line(widths.map((w) => "-".repeat(w)))];
  for (const r of rows) out.push(line(r));
  return out.join("\n");
}
