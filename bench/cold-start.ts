/**
 * `npm run bench:coldstart`: what each function costs at a cold start. esbuild bundles the entries of
 * bench/cold-start/ as they would ship to the Node 22 Lambda runtime (minified ESM, platform node, target node22,
 * `@aws-sdk/*` external: the runtime provides the SDK), then a fresh `node` process per run imports a bundle and
 * times the import with `performance.now()` (module evaluation, the SDK's own loading included; median of the runs,
 * the entries interleaved run by run so that load drift hits all alike).
 *
 *   tsx bench/cold-start.ts [--runs 20] [--json] [--top 15]
 *
 * Then, from esbuild's metafile, where each bundle's bytes come from (by package, by file of src/) and the import
 * chain from the entry to each heavy package: what pulls in the weight.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Command } from "commander";
import { build, type Plugin } from "esbuild";
import { type Bundle, type ColdStartResult, ENTRIES, type Entry } from "./cold-start-entries.js";
import { renderColdStart, staticSdkImports } from "./cold-start-report.js";
import { median, round } from "./stats.js";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Inside node_modules so that the external SDK resolves from the bundles as it does on the runtime. */
const OUT = join(ROOT, "node_modules", ".cache", "eonce-bench-cold-start");

/** One bundle per entry, as the Node 22 runtime would get it. */
export async function bundle(name: Entry): Promise<Bundle> {
  mkdirSync(OUT, { recursive: true });
  const file = join(OUT, `${name.replace(/\W+/g, "-")}.mjs`);
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, ENTRIES[name])],
    outfile: file,
    bundle: true,
    minify: true,
    format: "esm",
    platform: "node",
    target: "node22",
    external: ["@aws-sdk/*"],
    metafile: true,
    logLevel: "silent",
    plugins: name.startsWith("what-if") ? [stubObservability] : [],
    // CommonJS dependencies inside an ESM bundle call require(): give them one, as AWS's ESM examples do.
    banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
  });
  return { name, file, bytes: statSync(file).size, metafile: result.metafile };
}

const stubObservability: Plugin = {
  name: "stub-powertools-observability",
  setup(b) {
    b.onResolve({ filter: /^@aws-lambda-powertools\/(logger|metrics)$/ }, (args) => ({
      path: args.path,
      namespace: "stub",
    }));
    b.onLoad({ filter: /.*/, namespace: "stub" }, () => ({
      contents: "export class Logger {}; export class Metrics {}; export const MetricUnit = {};",
    }));
  },
};

/**
 * Imports `file` in a fresh node process and returns the import's duration, ms. With `preload`, those packages are
 * imported first and not timed: what remains is the bundle's own evaluation.
 */
export function importOnce(file: string, preload: string[] = []): { wallMs: number; cpuMs: number } {
  const pre = preload.map((p) => `await import(${JSON.stringify(p)});`).join("");
  const script = `${pre}const c0=process.cpuUsage();const t0=performance.now();await import(${JSON.stringify(pathToFileURL(file).href)});const w=performance.now()-t0;const c=process.cpuUsage(c0);process.stdout.write(w+" "+(c.user+c.system)/1000);`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    cwd: OUT,
    env: {
      ...process.env,
      AWS_REGION: "us-east-1",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      POWERTOOLS_METRICS_DISABLED: "true",
    },
  });
  const [wallMs, cpuMs] = out.split(" ").map(Number);
  return { wallMs: wallMs ?? Number.NaN, cpuMs: cpuMs ?? Number.NaN };
}

/** Each bundle imported `runs` times, each in a fresh process, the bundles interleaved run by run. */
export function measure(bundles: Bundle[], runs: number, preload: string[] = []): ColdStartResult[] {
  const samples = bundles.map(() => ({ wall: [] as number[], cpu: [] as number[] }));
  for (let r = 0; r < runs; r++) {
    for (let j = 0; j < bundles.length; j++) {
      const k = (r + j) % bundles.length;
      const { wallMs, cpuMs } = importOnce((bundles[k] as Bundle).file, preload);
      samples[k]?.wall.push(wallMs);
      samples[k]?.cpu.push(cpuMs);
    }
  }
  const summary = (s: number[]) => ({
    median: round(median(s), 2),
    min: round(Math.min(...s), 2),
    max: round(Math.max(...s), 2),
  });
  return bundles.map((b, k) => {
    const s = samples[k] ?? { wall: [], cpu: [] };
    return {
      name: b.name,
      bytes: b.bytes,
      importMs: summary(s.wall),
      importCpuMs: summary(s.cpu),
      samples: s.wall.map((x) => round(x, 2)),
    };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const opts = new Command()
    .option("--runs <n>", "fresh processes per bundle", "20")
    .option("--top <n>", "sources listed per bundle", "15")
    .option("--json", "print the results as JSON")
    .parse()
    .opts<{ runs: string; top: string; json?: boolean }>();
  const load = loadavg().map((l) => round(l));
  const bundles = [];
  for (const name of Object.keys(ENTRIES) as Entry[]) bundles.push(await bundle(name));
  const results = measure(bundles, Number(opts.runs));
  // The SDK packages any bundle loads statically, imported before the clock starts: each bundle's own evaluation.
  const sdk = [...new Set(bundles.flatMap((b) => staticSdkImports(b.metafile)))];
  const own = measure(bundles, Number(opts.runs), sdk);
  const meta = {
    node: process.version,
    cpu: `${cpus().length} × ${cpus()[0]?.model}`,
    load,
    loadEnd: loadavg(),
  };
  if (opts.json) console.log(JSON.stringify({ meta, preloaded: sdk, results, own }, null, 2));
  else console.log(renderColdStart(bundles, results, own, sdk, { top: Number(opts.top), meta }));
}
