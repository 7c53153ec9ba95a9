/**
 * Throughput vs workers as a self-contained SVG line chart, drawn from the measured numbers (no external
 * service, no dependency). x: worker count (equally spaced categories), y: events per second from 0.
 */
export interface Series {
  name: string;
  /** events/s per worker count */
  points: Record<string, number>;
  dashed?: boolean;
  /** Drawn thicker (the implementation the chart is about). */
  bold?: boolean;
}

const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

export function throughputSvg(series: Series[], title: string, subtitle = ""): string {
  const width = 760;
  const height = 440;
  const margin = { top: 56, right: 190, bottom: 56, left: 70 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const workers = [...new Set(series.flatMap((s) => Object.keys(s.points)))].sort(
    (a, b) => Number(a) - Number(b),
  );
  const maxValue = Math.max(1, ...series.flatMap((s) => Object.values(s.points)));
  const yMax = niceCeiling(maxValue);
  const x = (i: number) =>
    margin.left + (workers.length === 1 ? plotW / 2 : (i * plotW) / (workers.length - 1));
  const y = (v: number) => margin.top + plotH - (v / yMax) * plotH;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    // The accessible name: the chart's title and every series' numbers.
    `<title>${esc(`${title}. ${series.map((s) => `${s.name}: ${workers.map((w) => `${w} → ${s.points[w] ?? "–"}`).join(", ")}`).join("; ")} (events/s by workers)`)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${margin.left}" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`,
  );
  if (subtitle) out.push(`<text x="${margin.left}" y="42" fill="#555">${esc(subtitle)}</text>`);
  // Grid and y axis.
  const ticks = 5;
  for (let t = 0; t <= ticks; t++) {
    const v = (yMax * t) / ticks;
    const yy = y(v).toFixed(1);
    out.push(
      `<line x1="${margin.left}" y1="${yy}" x2="${margin.left + plotW}" y2="${yy}" stroke="#e5e5e5"/>`,
      `<text x="${margin.left - 8}" y="${yy}" text-anchor="end" dominant-baseline="middle" fill="#333">${Math.round(v)}</text>`,
    );
  }
  out.push(
    `<line x1="${margin.left}" y1="${margin.top + plotH}" x2="${margin.left + plotW}" y2="${margin.top + plotH}" stroke="#333"/>`,
    `<text x="18" y="${margin.top + plotH / 2}" transform="rotate(-90 18 ${margin.top + plotH / 2})" text-anchor="middle" fill="#333">events per second</text>`,
  );
  workers.forEach((w, i) => {
    out.push(
      `<text x="${x(i).toFixed(1)}" y="${margin.top + plotH + 20}" text-anchor="middle" fill="#333">${esc(w)}</text>`,
    );
  });
  out.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 14}" text-anchor="middle" fill="#333">concurrent workers</text>`,
  );
  // Lines, points, legend.
  series.forEach((s, k) => {
    const color = s.dashed ? "#000000" : (COLORS[k % COLORS.length] as string);
    const pts = workers
      .map((w, i) =>
        s.points[w] === undefined ? undefined : `${x(i).toFixed(1)},${y(s.points[w] as number).toFixed(1)}`,
      )
      .filter((p): p is string => p !== undefined);
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="${s.bold ? 3.5 : 2}"${s.dashed ? ' stroke-dasharray="6 4"' : ""} points="${pts.join(" ")}"/>`,
    );
    for (const p of pts) {
      const [px, py] = p.split(",");
      out.push(`<circle cx="${px}" cy="${py}" r="3.5" fill="${color}"/>`);
    }
    const ly = margin.top + 8 + k * 22;
    const lx = margin.left + plotW + 20;
    out.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
      `<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${esc(s.name)}</text>`,
    );
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

function niceCeiling(v: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    if (v <= step * magnitude) return step * magnitude;
  }
  return 10 * magnitude;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
