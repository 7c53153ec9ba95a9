/**
 * `npm run bench`: effectively-once against Powertools idempotency and the usual fixes, on one DynamoDB Local
 * started here, in one process. See docs/benchmarks.md for what is measured and how to read it.
 *
 *   tsx bench/main.ts                 all scenarios at full size, markdown tables on stdout
 *   tsx bench/main.ts --json          the compact JSON report (BenchJson, bench/report.ts) on stdout
 *   tsx bench/main.ts --quick         small numbers (the test suite's smoke run)
 *   tsx bench/main.ts --out r.json --svg chart.svg   also keep the full report and draw the chart
 *   tsx bench/main.ts --from r.json --svg chart.svg  redraw from a saved report, without running
 *   tsx bench/main.ts --latency 1,4,8 [--jitter 1]  latency mode: only the runs behind the latency proxy
 *                                                    (bench/latency-proxy.ts) at these one-way delays, in ms:
 *                                                    the injected scenario and the stream path
 *   tsx bench/main.ts --only streams --latency 1,4,8  the stream path alone (loopback, then each delay)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Command, InvalidArgumentError } from "commander";
import { type Series, throughputSvg } from "./chart.js";
import {
  type BenchOptions,
  FULL,
  QUICK,
  type Report,
  runBench,
  SCENARIOS,
  type Scenario,
} from "./harness.js";
import { terminalProgress } from "./progress.js";
import { rawWriteRate, renderMarkdown, reportJson, toBenchJson } from "./report.js";

export interface Io {
  stdout: (text: string) => void;
  /** Progress bar and usage errors; the bar only draws when this is a terminal. */
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError("must be a positive integer");
  return n;
};

const scenarioList = (value: string): Scenario[] => {
  const list = value.split(",").map((s) => s.trim());
  for (const s of list) {
    if (!(SCENARIOS as readonly string[]).includes(s))
      throw new InvalidArgumentError(`unknown scenario ${s}`);
  }
  return list as Scenario[];
};

const workerList = (value: string): number[] => value.split(",").map((s) => positiveInt(s.trim()));

const milliseconds = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || value.trim() === "")
    throw new InvalidArgumentError("must be a number of milliseconds ≥ 0");
  return n;
};

const msList = (value: string): number[] => value.split(",").map((s) => milliseconds(s.trim()));

export async function main(argv: string[], io: Io = defaultIo()): Promise<Report> {
  const program = new Command()
    .name("bench")
    .description("effectively-once vs Powertools idempotency and the usual fixes, on DynamoDB Local")
    .option("--json", "print the compact JSON report (BenchJson in bench/report.ts)")
    .option("--events <n>", "distinct keys per throughput run (default 10000; quick 100)", positiveInt)
    .option("--reps <n>", "latency repetitions (default 5; quick 2)", positiveInt)
    .option("--quick", "small numbers: a smoke run of every scenario")
    .option("--endpoint <url>", "use this DynamoDB Local instead of starting one")
    .option("--out <file>", "also write the full report (JSON) to this file")
    .option("--svg <file>", "also write the throughput chart (SVG) to this file")
    .option("--from <file>", "render a saved full report instead of running")
    .option(
      "--only <scenarios>",
      `run only some scenarios (development): ${SCENARIOS.join(",")}`,
      scenarioList,
    )
    .option("--workers <list>", "worker counts for throughput (default 1,4,16)", workerList)
    .option(
      "--latency <ms>",
      "latency mode: one-way delays injected by a TCP proxy, e.g. 1,4,8 (alone: runs only injected and streams)",
      msList,
    )
    .option("--jitter <ms>", "± jitter on each injected delay (default 0)", milliseconds)
    .option(
      "--stream-subjects <n>",
      "partition keys (items) per stream batch (default 4; quick 3; at most the batch's 100 records)",
      positiveInt,
    )
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: (s) => io.stderr.write(s) });
  program.parse(argv, { from: "user" });
  const opts = program.opts<{
    json?: boolean;
    events?: number;
    reps?: number;
    quick?: boolean;
    endpoint?: string;
    out?: string;
    svg?: string;
    from?: string;
    only?: Scenario[];
    workers?: number[];
    latency?: number[];
    jitter?: number;
    streamSubjects?: number;
  }>();

  let report: Report;
  if (opts.from) {
    report = JSON.parse(readFileSync(opts.from, "utf8")) as Report;
  } else {
    // The SDK warns once per process about Node 20; it is noise on stderr here.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
    report = await runBench(benchOptions(opts, io));
  }
  if (opts.out) writeFileSync(opts.out, reportJson(report));
  if (opts.svg) writeFileSync(opts.svg, chartOf(report));
  io.stdout(opts.json ? `${JSON.stringify(toBenchJson(report))}\n` : renderMarkdown(report));
  return report;
}

type Opts = {
  events?: number;
  reps?: number;
  quick?: boolean;
  endpoint?: string;
  only?: Scenario[];
  workers?: number[];
  latency?: number[];
  jitter?: number;
  streamSubjects?: number;
};

/** The command line over the full (or quick) defaults. */
function benchOptions(opts: Opts, io: Io): BenchOptions {
  const base = opts.quick ? QUICK : FULL;
  return {
    ...base,
    ...(opts.events ? { events: opts.events } : {}),
    ...(opts.reps ? { reps: opts.reps } : {}),
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(opts.only ? { only: opts.only } : {}),
    ...(opts.workers ? { workers: opts.workers } : {}),
    ...(opts.latency ? { injectedOneWayMs: opts.latency } : {}),
    ...(opts.jitter !== undefined ? { jitterMs: opts.jitter } : {}),
    ...(opts.streamSubjects ? { streamSubjects: opts.streamSubjects } : {}),
    // --latency alone is the latency mode: only the runs behind the proxy (the stream path's among them).
    ...(opts.latency && !opts.only ? { only: ["injected" as const, "streams" as const] } : {}),
    progress: terminalProgress(io.stderr),
  };
}

export function chartOf(report: Report): string {
  const series: Series[] = Object.entries(report.throughput).map(([name, byW]) => ({
    name,
    points: Object.fromEntries(Object.entries(byW).map(([w, r]) => [w, r.eventsPerSecond])),
    bold: name === "ours" || name === "ours-apply",
  }));
  series.push({ name: "raw conditional PutItem", points: rawWriteRate(report), dashed: true });
  const m = report.meta;
  return throughputSvg(
    series,
    `Throughput vs workers, ${m.options.events} distinct keys, DynamoDB Local`,
    `${m.date.slice(0, 10)} · ${m.nproc} cores, load average ${m.loadAverageStart[0]} at the start · Node ${m.node} · DynamoDB Local ${m.dynamodbLocal.split(" ")[0]}`,
  );
}

function defaultIo(): Io {
  return { stdout: (text) => process.stdout.write(text), stderr: process.stderr };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    const code = (error as { code?: string }).code;
    // commander has printed help or the usage error already.
    if (code === "commander.helpDisplayed" || code === "commander.version") process.exit(0);
    if (typeof code === "string" && code.startsWith("commander.")) process.exit(2);
    console.error(error);
    process.exit(1);
  });
}
