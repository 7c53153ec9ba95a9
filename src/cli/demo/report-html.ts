import type { DemoReport, ScenarioReport } from "./run-demo.js";
import type { TimelineEntry, TimelineOutcome } from "./scenario.js";

/**
 * The demo's report as one self-contained HTML file: no script, no external resource; charts are inline
 * SVG (class `chart`, with a `data-chart` name), pictures are data URIs.
 */
export function renderHtmlReport(report: DemoReport, generatedAt = new Date()): string {
  const byName = new Map<string, ScenarioReport[]>();
  for (const s of report.scenarios) byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
  const sections = [...byName.entries()].map(([name, modes]) => scenarioSection(name, modes)).join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>effectively-once — local demo report</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>effectively-once — the three classic failures, guard off and on</h1>
<p class="meta">Seed ${report.seed} · scale ${report.scale} · wall time ${(report.wallTimeMs / 1000).toFixed(1)} s ·
generated ${esc(generatedAt.toISOString())} · local runtime: DynamoDB Local, s3rver, fauxqs on 127.0.0.1</p>
<p>Every count of effects below was read from the tables and buckets after the run, not from the runtime's
bookkeeping. <b>duplicate effects</b>: effects beyond one per distinct event; <b>stale results</b>: subjects
whose final result is not from their newest event; <b>lost events</b>: events neither processed nor
legitimately skipped.</p>
</header>
<section id="summary">
<h2>Summary</h2>
${summaryTable(report)}
</section>
${sections}
</body>
</html>
`;
}

const CSS = `
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1040px;padding:24px;color:#1d232b;background:#fff}
h1{font-size:24px;margin:0 0 8px}h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d8dde3;padding-bottom:4px}
h3{font-size:16px;margin:18px 0 6px}.meta{color:#5b6470;font-size:13px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d8dde3;padding:4px 10px;text-align:right}th{background:#f3f5f7}
td.l,th.l{text-align:left}td.bad{background:#fde5e2;color:#9b1c0c;font-weight:600}td.good{background:#e3f4e6;color:#1c6b2c}
.charts{display:flex;flex-wrap:wrap;gap:16px}.chart{background:#fbfcfd;border:1px solid #e3e7eb;border-radius:6px}
.modes{display:grid;grid-template-columns:1fr 1fr;gap:16px}.mode{border:1px solid #e3e7eb;border-radius:6px;padding:8px 12px}
.mode h4{margin:4px 0}.mode ul{margin:4px 0;padding-left:18px;font-size:13px}
.samples{display:flex;flex-wrap:wrap;gap:10px}.samples figure{margin:0;text-align:center;font-size:11px;color:#5b6470}
.samples img{width:64px;height:64px;image-rendering:pixelated;border:1px solid #d8dde3}
`;

const SERIES_COLOURS = { off: "#d2553f", on: "#2f8f4e" } as const;

function summaryTable(report: DemoReport): string {
  const rows = report.scenarios
    .map((s) => {
      const bad = (v: number) => (v > 0 ? "bad" : "good");
      return `<tr><td class="l">${esc(s.name)}</td><td class="l">${s.guard}</td><td>${s.deliveries}</td>
<td>${s.distinctEvents}</td><td>${s.handlerRuns}</td><td class="${bad(s.duplicateEffects)}">${s.duplicateEffects}</td>
<td class="${bad(s.staleResults)}">${s.staleResults}</td><td class="${bad(s.lostEvents)}">${s.lostEvents}</td>
<td>${(s.durationMs / 1000).toFixed(1)} s</td></tr>`;
    })
    .join("\n");
  return `<table id="summary-table"><thead><tr><th class="l">scenario</th><th class="l">guard</th><th>deliveries</th>
<th>distinct events</th><th>handler runs</th><th>duplicate effects</th><th>stale results</th><th>lost events</th>
<th>time</th></tr></thead><tbody>
${rows}
</tbody></table>`;
}

function scenarioSection(name: string, modes: ScenarioReport[]): string {
  const first = modes[0];
  if (!first) return "";
  const value = (guard: "off" | "on", pick: (s: ScenarioReport) => number) => {
    const s = modes.find((m) => m.guard === guard);
    return s ? pick(s) : undefined;
  };
  const group = (label: string, pick: (s: ScenarioReport) => number) => ({
    label,
    off: value("off", pick),
    on: value("on", pick),
  });
  const failures = barChart(`${name}-failures`, "What went wrong (counted in the stores)", [
    group("duplicate effects", (s) => s.duplicateEffects),
    group("stale results", (s) => s.staleResults),
    group("lost events", (s) => s.lostEvents),
  ]);
  const work = barChart(`${name}-work`, "Work done", [
    group("distinct events", (s) => s.distinctEvents),
    group("deliveries", (s) => s.deliveries),
    group("handler runs", (s) => s.handlerRuns),
  ]);
  return `<section class="scenario" id="scenario-${esc(name)}">
<h2>${esc(first.title)}</h2>
<p>${esc(first.description)}</p>
<div class="charts">${failures}${work}</div>
<div class="modes">${modeBoxes(modes)}</div>
${timelines(name, modes)}
${samples(modes)}
</section>`;
}

/** What each mode noted and counted beyond the comparison. */
function modeBoxes(modes: ScenarioReport[]): string {
  return modes
    .map((m) => {
      const details = Object.entries(m.details)
        .map(([k, v]) => `<li>${esc(k)}: ${v}</li>`)
        .join("");
      const notes = m.notes.map((n) => `<li>${esc(n)}</li>`).join("");
      return `<div class="mode"><h4>guard ${m.guard}</h4><ul>${notes}${details}</ul></div>`;
    })
    .join("\n");
}

function timelines(name: string, modes: ScenarioReport[]): string {
  return modes
    .flatMap((m) =>
      (m.timelines ?? [])
        .filter((t) => t.entries.length > 0)
        .map(
          (t, i) =>
            `<h3>Timeline of one key, guard ${m.guard}: ${esc(t.key)}</h3><p class="meta">${esc(t.caption)}</p>
${timelineChart(`${name}-timeline-${m.guard}-${i + 1}`, t.lanes, t.entries)}`,
        ),
    )
    .join("\n");
}

function samples(modes: ScenarioReport[]): string {
  return modes
    .filter((m) => m.samples && m.samples.length > 0)
    .map(
      (m) =>
        `<h3>Output samples, guard ${m.guard}</h3><div class="samples">${(m.samples ?? [])
          .map(
            (s) =>
              `<figure><img alt="${esc(s.label)}" src="${esc(s.dataUri)}"><figcaption>${esc(s.label)}</figcaption></figure>`,
          )
          .join("")}</div>`,
    )
    .join("\n");
}

interface BarGroup {
  label: string;
  off: number | undefined;
  on: number | undefined;
}

/** Grouped bars, guard off (red) next to guard on (green), one group per metric, values written on top. */
export function barChart(id: string, title: string, groups: BarGroup[]): string {
  const width = 480;
  const height = 250;
  const top = 56;
  const bottom = 206;
  const left = 30;
  const max = Math.max(1, ...groups.flatMap((g) => [g.off ?? 0, g.on ?? 0]));
  const groupWidth = (width - left - 10) / groups.length;
  const barWidth = Math.min(48, groupWidth / 3);
  const parts: string[] = [];
  groups.forEach((g, i) => {
    const x0 = left + i * groupWidth + (groupWidth - 2 * barWidth - 6) / 2;
    (["off", "on"] as const).forEach((series, j) => {
      const v = g[series];
      if (v === undefined) return;
      const h = ((bottom - top) * v) / max;
      const x = x0 + j * (barWidth + 6);
      parts.push(
        `<rect class="bar ${series}" data-series="${series}" data-metric="${esc(g.label)}" x="${x.toFixed(1)}" y="${(bottom - h).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(h, 0.5).toFixed(1)}" fill="${SERIES_COLOURS[series]}"><title>${esc(g.label)}, guard ${series}: ${v}</title></rect>`,
        `<text class="value" x="${(x + barWidth / 2).toFixed(1)}" y="${(bottom - h - 4).toFixed(1)}" text-anchor="middle" font-size="12">${v}</text>`,
      );
    });
    parts.push(
      `<text class="label" x="${(left + i * groupWidth + groupWidth / 2).toFixed(1)}" y="${bottom + 18}" text-anchor="middle" font-size="12">${esc(g.label)}</text>`,
    );
  });
  const legend = (["off", "on"] as const)
    .map(
      (s, i) =>
        `<rect x="${10 + i * 80}" y="30" width="12" height="12" fill="${SERIES_COLOURS[s]}"/><text x="${26 + i * 80}" y="40" font-size="12">guard ${s}</text>`,
    )
    .join("");
  return `<svg class="chart bar-chart" data-chart="${esc(id)}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(title)}">
<text x="10" y="22" font-size="14" font-weight="600">${esc(title)}</text>${legend}
<line x1="${left}" y1="${bottom}" x2="${width - 10}" y2="${bottom}" stroke="#8a939e"/>
${parts.join("\n")}
</svg>`;
}

const OUTCOME_COLOURS: Record<TimelineOutcome, string> = {
  processed: "#2f8f4e",
  "took-over": "#1f6fb2",
  duplicate: "#8a939e",
  stale: "#b58b00",
  superseded: "#8e44ad",
  "lease-lost": "#c0392b",
  busy: "#e67e22",
  "in-flight": "#e67e22",
  failed: "#d2553f",
  "timed-out": "#d2553f",
  crashed: "#000000",
};

/**
 * Deliveries of one key on a time axis, one row per event of the key: each run is a bar from its
 * delivery to its end (a zombie's bar runs until its code finished), its outcome written at the end.
 */
export function timelineChart(id: string, lanes: string[], entries: TimelineEntry[]): string {
  const width = 960;
  const top = 50;
  const left = 60;
  const right = 110;
  const rowHeight = 26;
  const sorted = [...entries].sort((a, b) => a.atMs - b.atMs);
  const rowsPerLane = lanes.map((lane) => Math.max(1, sorted.filter((e) => e.lane === lane).length));
  const laneTop = (i: number) => top + rowsPerLane.slice(0, i).reduce((a, n) => a + n * rowHeight + 16, 0);
  const plotBottom = laneTop(lanes.length);
  const height = plotBottom + 40;
  const maxMs = Math.max(100, ...entries.map((e) => Math.max(e.atMs, e.endMs)));
  const x = (ms: number) => left + ((width - left - right) * ms) / maxMs;
  const parts: string[] = [];
  lanes.forEach((lane, i) => {
    const y0 = laneTop(i);
    const h = (rowsPerLane[i] ?? 1) * rowHeight;
    parts.push(
      `<rect x="${left}" y="${y0}" width="${width - left - right}" height="${h}" fill="${i % 2 ? "#f6f8fa" : "#fdfdfe"}"/>`,
      `<text x="8" y="${y0 + h / 2 + 4}" font-size="13" font-weight="600">${esc(lane)}</text>`,
    );
  });
  const rowInLane = new Map<string, number>();
  for (const e of sorted) {
    const laneIndex = Math.max(0, lanes.indexOf(e.lane));
    const row = rowInLane.get(e.lane) ?? 0;
    rowInLane.set(e.lane, row + 1);
    const y = laneTop(laneIndex) + row * rowHeight + rowHeight / 2;
    const tag = e.duplicate ? " (dup)" : e.attempt > 1 ? ` (#${e.attempt})` : "";
    const colour = OUTCOME_COLOURS[e.outcome];
    const x0 = x(e.atMs);
    const x1 = Math.max(x(e.endMs), x0 + 2);
    parts.push(
      `<rect class="run" x="${x0.toFixed(1)}" y="${y - 4}" width="${(x1 - x0).toFixed(1)}" height="8" rx="3" fill="${colour}" fill-opacity="0.35"/>`,
      `<circle class="delivery" data-outcome="${e.outcome}" cx="${x1.toFixed(1)}" cy="${y}" r="6" fill="${colour}"><title>${esc(e.lane)}${esc(tag)}: delivered at ${e.atMs} ms, ended at ${e.endMs} ms: ${e.outcome}</title></circle>`,
      `<text class="outcome" x="${(x1 + 10).toFixed(1)}" y="${y + 4}" font-size="11">${e.outcome}${esc(tag)}</text>`,
    );
  }
  const axisY = plotBottom + 4;
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => {
      const ms = Math.round(maxMs * f);
      return `<line x1="${x(ms)}" y1="${axisY}" x2="${x(ms)}" y2="${axisY + 5}" stroke="#8a939e"/><text x="${x(ms)}" y="${axisY + 18}" font-size="11" text-anchor="middle">${ms} ms</text>`;
    })
    .join("");
  const used = [...new Set(entries.map((e) => e.outcome))];
  const legend = used
    .map(
      (o, i) =>
        `<circle cx="${left + i * 110}" cy="20" r="6" fill="${OUTCOME_COLOURS[o]}"/><text x="${left + 10 + i * 110}" y="24" font-size="12">${o}</text>`,
    )
    .join("");
  return `<svg class="chart timeline" data-chart="${esc(id)}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="deliveries of one key over time">
${legend}
${parts.join("\n")}
<line x1="${left}" y1="${axisY}" x2="${width - right}" y2="${axisY}" stroke="#8a939e"/>${ticks}
</svg>`;
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
