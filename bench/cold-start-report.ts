import { join, relative } from "node:path";
import type { Metafile } from "esbuild";
import type { Bundle, ColdStartResult } from "./cold-start-entries.js";
import { round } from "./stats.js";

/** The repository root (this file is in bench/). */
const REPO = join(import.meta.dirname ?? ".", "..");

interface Meta {
  node: string;
  cpu: string;
  load: number[];
  loadEnd: number[];
}

function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

const kib = (bytes: number) => `${round(bytes / 1024, 1)} KiB`;

/** The bundles, their import times, the targets, and where each bundle's bytes come from. */
export function renderColdStart(
  bundles: Bundle[],
  results: ColdStartResult[],
  own: ColdStartResult[],
  preloaded: string[],
  o: { top: number; meta: Meta },
): string {
  const runs = results[0]?.samples.length ?? 0;
  const ms = (r: ColdStartResult | undefined) =>
    r
      ? `${r.importMs.median} (${r.importMs.min}–${r.importMs.max}); CPU ${r.importCpuMs.median} (${r.importCpuMs.min}–${r.importCpuMs.max})`
      : "–";
  const parts = [
    `Node ${o.meta.node} on ${o.meta.cpu}; load average ${o.meta.load.join(" ")} at the start, ${o.meta.loadEnd.map((l) => round(l)).join(" ")} at the end; ${runs} fresh processes per bundle and measure, interleaved. Own evaluation: the same import with ${preloaded.join(", ")} imported first, untimed.\n`,
    table(
      [
        "bundle",
        "bytes",
        "import ms, SDK included: median (min–max); CPU ms",
        "own evaluation ms (SDK preloaded); CPU ms",
        "SDK packages left to the runtime",
      ],
      results.map((r) => {
        const b = bundles.find((x) => x.name === r.name) as Bundle;
        return [
          r.name,
          `${r.bytes} (${kib(r.bytes)})`,
          ms(r),
          ms(own.find((x) => x.name === r.name)),
          externals(b.metafile).join(", ") || "none",
        ];
      }),
    ),
  ];
  parts.push(renderTargets(results, own));
  for (const b of bundles.filter((x) => x.name !== "sdk only")) parts.push(renderSources(b, bundles, o.top));
  return `${parts.join("\n")}\n`;
}

function renderTargets(results: ColdStartResult[], own: ColdStartResult[]): string {
  const pick = (list: ColdStartResult[], name: string) => list.find((r) => r.name === name);
  const rows = COMPARED.flatMap((name) =>
    targetRows(pick(results, "ours"), pick(results, name), pick(own, "ours"), pick(own, name), name),
  );
  if (rows.length === 0) return "";
  return `\nTargets:\n\n${table(
    ["target", "met", "measured"],
    rows.map(([t, met, m]) => [t, met ? "met" : "**missed**", m]),
  )}`;
}

/** What ours is held against: Powertools idempotency alone, and with Logger and Metrics as ours has them. */
const COMPARED = ["powertools + Logger + Metrics", "powertools"] as const;

function targetRows(
  ours: ColdStartResult | undefined,
  pt: ColdStartResult | undefined,
  ownOurs: ColdStartResult | undefined,
  ownPt: ColdStartResult | undefined,
  name: string,
): [string, boolean, string][] {
  if (!ours || !pt || !ownOurs || !ownPt) return [];
  const x = (a: number, b: number) => `${round(a / b, 2)}×`;
  return [
    [
      `bundle bytes ≤ ${name}`,
      ours.bytes <= pt.bytes,
      `${ours.bytes} vs ${pt.bytes} (${x(ours.bytes, pt.bytes)})`,
    ],
    [
      `import in a fresh process ≤ ${name} (median, SDK included)`,
      ours.importMs.median <= pt.importMs.median,
      `${ours.importMs.median} vs ${pt.importMs.median} ms (${x(ours.importMs.median, pt.importMs.median)})`,
    ],
    [
      `own evaluation ≤ ${name} (median, SDK preloaded)`,
      ownOurs.importMs.median <= ownPt.importMs.median,
      `${ownOurs.importMs.median} vs ${ownPt.importMs.median} ms (${x(ownOurs.importMs.median, ownPt.importMs.median)})`,
    ],
    [
      `own evaluation's CPU ≤ ${name} (median, SDK preloaded)`,
      ownOurs.importCpuMs.median <= ownPt.importCpuMs.median,
      `${ownOurs.importCpuMs.median} vs ${ownPt.importCpuMs.median} ms (${x(ownOurs.importCpuMs.median, ownPt.importCpuMs.median)})`,
    ],
  ];
}

/** A bundle's bytes by source, each heavy one with the import chain that pulls it in, and whether the other has it. */
function renderSources(b: Bundle, bundles: Bundle[], top: number): string {
  // Ours beside the comparison of the target; every other bundle beside ours.
  const otherName = b.name === "ours" ? COMPARED[0] : "ours";
  const other = bundles.find((x) => x.name === otherName);
  const otherSources = other ? bytesBySource(other.metafile) : new Map<string, number>();
  const rows = [...bytesBySource(b.metafile)]
    .slice(0, top)
    .map(([source, bytes]) => [
      source,
      bytes,
      `${round((100 * bytes) / b.bytes, 1)} %`,
      other ? (otherSources.has(source) ? `yes (${otherSources.get(source)})` : "no") : "–",
      chainTo(b.metafile, source).join(" → "),
    ]);
  const all = [...bytesBySource(b.metafile)];
  const ownSrc = all.filter(([source]) => source.startsWith("src/")).reduce((sum, [, n]) => sum + n, 0);
  const packages = all.filter(([source]) => !source.startsWith("src/") && !source.startsWith("bench/"));
  const summary = `${ownSrc} bytes from this repository's src/ (${round((100 * ownSrc) / b.bytes, 1)} %), ${packages.reduce((sum, [, n]) => sum + n, 0)} from ${packages.length} npm packages (${packages.map(([p, n]) => `${p} ${n}`).join(", ")})`;
  return `\n${b.name}: ${summary}. By source (top ${top}):\n\n${table(
    ["source", "bytes", "share", `in ${other?.name ?? "the other"}`, "imported through"],
    rows,
  )}`;
}

/** Where a bundle's bytes come from: npm package (`@scope/name`), or the repo file for our own sources. */
export function bytesBySource(metafile: Metafile): Map<string, number> {
  const out = new Map<string, number>();
  const [output] = Object.values(metafile.outputs);
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const key = sourceOf(input);
    out.set(key, (out.get(key) ?? 0) + bytesInOutput);
  }
  return new Map([...out].sort((a, b) => b[1] - a[1]));
}

export function sourceOf(input: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (m?.[1]) return m[1];
  return relative(REPO, join(REPO, input)).replace(/^(\.\.\/)+/, "");
}

/**
 * The import chain from the entry to any input of `source` through the fewest modules the bundle dropped (a module
 * esbuild read but shook out, or one of re-exports only), then the shortest: a 0-1 breadth-first search over the
 * metafile, so the chain names the files that keep `source` in the bundle.
 */
export function chainTo(metafile: Metafile, source: string): string[] {
  const inputs = metafile.inputs;
  const kept = Object.values(metafile.outputs)[0]?.inputs ?? {};
  const entry = Object.keys(inputs).find((i) => i.startsWith("bench/cold-start/"));
  if (!entry) return [];
  const cost = new Map<string, number>([[entry, 0]]);
  const previous = new Map<string, string | undefined>([[entry, undefined]]);
  const deque = [entry];
  const done = new Set<string>();
  while (deque.length > 0) {
    const at = deque.shift() as string;
    if (done.has(at)) continue;
    done.add(at);
    if (sourceOf(at) === source) {
      const chain: string[] = [];
      for (let p: string | undefined = at; p !== undefined; p = previous.get(p)) chain.unshift(sourceOf(p));
      return chain.filter((c, i) => c !== chain[i - 1]);
    }
    for (const imp of inputs[at]?.imports ?? []) {
      if (imp.external || done.has(imp.path)) continue;
      const step = (kept[imp.path]?.bytesInOutput ?? 0) > 0 ? 0 : 1;
      const c = (cost.get(at) ?? 0) + step;
      if (c >= (cost.get(imp.path) ?? Number.POSITIVE_INFINITY)) continue;
      cost.set(imp.path, c);
      previous.set(imp.path, at);
      if (step === 0) deque.unshift(imp.path);
      else deque.push(imp.path);
    }
  }
  return [];
}

/** The SDK packages a bundle leaves to the runtime (its external imports). */
export function externals(metafile: Metafile): string[] {
  const stat = new Set<string>();
  const dynamic = new Set<string>();
  for (const input of Object.values(metafile.inputs))
    for (const imp of input.imports)
      if (imp.external) (imp.kind === "dynamic-import" ? dynamic : stat).add(imp.path);
  for (const path of stat) dynamic.delete(path);
  return [...[...stat].sort(), ...[...dynamic].sort().map((p) => `${p} (dynamic: on first use)`)];
}

/** The SDK packages a bundle imports statically: what its cold start loads from the runtime. */
export function staticSdkImports(metafile: Metafile): string[] {
  return externals(metafile).filter((p) => p.startsWith("@aws-sdk/") && !p.includes("(dynamic"));
}
