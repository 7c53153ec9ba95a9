import type { Report } from "./harness.js";
import type { InjectedRun } from "./injected-latency.js";
import { PRICES } from "./prices.js";
import {
  contendedHotKeyLimits,
  type HotKeyLimit,
  leaseHoldLimit,
  PARTITION_WCU_PER_SECOND,
  RATES,
  referenceRun,
  SECONDS_PER_MONTH,
  scaleRows,
  sequentialHotKeyLimits,
  usd,
} from "./scale.js";
import { round, type Spread } from "./stats.js";
import type { Target } from "./target.js";
import type { WrapperResults } from "./wrapper-path.js";

/** Our paths, each compared with Powertools at the same latency. */
export const OUR_PATHS = [
  "inline",
  "inline-run",
  "inline-wrapper-apply",
  "inline-wrapper-run",
  "ours-apply",
  "ours",
  "ours-put",
];
/** Paths that hold a key from claim to commit under busy `wait` / `retry` (Powertools locks per event, not per key). */
const LEASE_PATHS = new Set(["ours", "ours-put", "inline-run", "inline-wrapper-run", "sequencer-lock"]);
const WRAPPER_TARGET = 1.05;

const fmt = (s: Spread) => `${s.median} (${s.min}–${s.max})`;
const signedPct = (x: number) => `${x < 0 ? "−" : "+"}${round(Math.abs(x) * 100, 1)} %`;

function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Sections 6, 7 and 8, those the report has data for (empty when none). */
export function renderLambdaPath(report: Report): string {
  const parts: string[] = [];
  if (report.injectedLatency?.length) parts.push(renderInjected(report.injectedLatency, report.meta));
  if (report.wrappers || report.injectedLatency?.length) parts.push(renderWrappers(report));
  if (Object.keys(report.requestsPerEvent).length > 0) parts.push(renderScale(report));
  return parts.map((p) => `\n${p}`).join("\n");
}

/** Section 6: one table per one-way delay. */
export function renderInjected(runs: InjectedRun[], m: Report["meta"]): string {
  const parts = [
    `### 6. Latency of a new event at injected network delay (bench/latency-proxy.ts; ${m.options.injectedReps} repetitions × ${m.options.injectedEvents} events)\n`,
    "Each request crosses a TCP proxy that delays every chunk by the one-way delay in each direction (a round trip: twice that), as a request from Lambda to DynamoDB pays its round trip. Added and × are over the raw conditional PutItem (`rawWrite`) of the same repetition; median of the repetitions (min–max).",
  ];
  for (const run of runs) {
    parts.push(
      `\n#### ${run.oneWayMs} ms one way (jitter ±${run.jitterMs} ms; the proxy's timers fired ${run.proxyLateMs} ms late per chunk on average)\n`,
    );
    parts.push(
      table(
        [
          "implementation",
          "requests/event",
          "p50 ms",
          "p99 ms",
          "p50 added ms",
          "p99 added ms",
          "p50 × raw",
          "p99 × raw",
          "client CPU ms/event",
        ],
        Object.entries(run.rows).map(([name, r]) => [
          name,
          r.requestsPerEvent,
          fmt(r.p50Ms),
          fmt(r.p99Ms),
          fmt(r.addedP50Ms),
          fmt(r.addedP99Ms),
          fmt(r.ratioP50),
          fmt(r.ratioP99),
          r.cpuMsPerEvent,
        ]),
      ),
    );
  }
  return parts.join("\n");
}

/** Section 7: the wrapper path, one table per condition (loopback, then each injected delay). */
export function renderWrappers(report: Report): string {
  const conditions: [string, WrapperResults][] = [
    ...(report.wrappers ? [["on the loopback", report.wrappers] as [string, WrapperResults]] : []),
    ...(report.injectedLatency ?? []).map(
      (r) => [`at ${r.oneWayMs} ms one way`, r.wrappers] as [string, WrapperResults],
    ),
  ];
  const parts = [
    `### 7. The Lambda wrapper path (bench/wrapper-path.ts; ${report.meta.options.wrapperReps} repetitions × ${report.meta.options.wrapperInvocations} invocations per row)\n`,
    "Per trigger, interleaved invocation by invocation: the handler's effect alone (`unguarded`), the bare guard, the wrapper in mode `apply` and `run` (inline state), and Powertools' `makeIdempotent` on the same handler. ms/event: the invocation's p50 ÷ its events (an SQS batch of 10 shares one invocation); added: over `unguarded`; × bare: the wrapper's p50 (and CPU) over the bare guard's in the same mode.",
  ];
  for (const [label, results] of conditions) {
    parts.push(`\n#### ${label}\n`);
    const rows: (string | number)[][] = [];
    for (const [trigger, byRow] of Object.entries(results)) {
      for (const [name, w] of Object.entries(byRow ?? {})) {
        rows.push([
          trigger,
          name,
          w.requestsPerEvent,
          w.wcuPerEvent,
          fmt(w.invocationP50Ms),
          w.msPerEvent,
          w.addedMsPerEvent,
          w.overBareP50 ? fmt(w.overBareP50) : "–",
          w.cpuMsPerEvent,
          w.overBareCpu ?? "–",
          w.correct ? "ok" : "NOT ok",
        ]);
      }
    }
    parts.push(
      table(
        [
          "trigger",
          "row",
          "requests/event",
          "WCU/event",
          "invocation p50 ms",
          "ms/event",
          "added ms/event",
          "p50 × bare",
          "CPU ms/event",
          "CPU × bare",
          "correct",
        ],
        rows,
      ),
    );
  }
  return parts.join("\n");
}

/** Section 8: cost per month and hot-key limits, computed from this report. */
export function renderScale(report: Report): string {
  const ref = referenceRun(report);
  const at = ref ? `the p50 at ${ref.oneWayMs} ms one way (section 6)` : "the loopback p50 (section 2)";
  const parts = [
    "### 8. Scale on paper (bench/scale.ts, from this report's measurements)\n",
    `New events only, one Lambda invocation each (${PRICES.lambdaMemoryMb} MB, billed ms = ${at}, rounded up), a month of ${SECONDS_PER_MONTH / 3600} h, prices of ${PRICES.date} (${PRICES.region}, bench/prices.ts). Partitions: write units per second ÷ ${PARTITION_WCU_PER_SECOND}, keys spread evenly.\n`,
  ];
  parts.push(
    table(
      [
        "implementation",
        "WCU + RCU/event",
        "Lambda ms/event",
        ...RATES.flatMap((r) => [
          `${r.toLocaleString("en-US")}/s: DynamoDB`,
          "Lambda",
          "total/month",
          "partitions",
        ]),
      ],
      scaleRows(report).map((s) => [
        s.name,
        `${s.wcuPerEvent} + ${s.rcuPerEvent}`,
        s.lambdaMsPerEvent,
        ...RATES.flatMap((r) => {
          const c = s.perMonth[String(r)];
          return c ? [usd(c.dynamodbUsd), usd(c.lambdaUsd), usd(c.totalUsd), c.writePartitions] : [];
        }),
      ]),
    ),
  );
  parts.push(renderHotKeyLimits(report));
  return parts.join("\n");
}

function renderHotKeyLimits(report: Report): string {
  const parts = [
    `\nOne hot key: its items (state, row, lock) each live in one partition, ${PARTITION_WCU_PER_SECOND} WCU/s. Sequential: new versions one after another (section 1's breakdown by table); lease hold: 1000 ÷ the p50 at the reference latency, for paths that hold the key from claim to commit under busy \`wait\`/\`retry\` (0 ms handler: a real one's time adds to the hold). With \`supersede\` a newer version takes the claim from a live older holder instead of waiting: the hold no longer limits a key whose versions keep coming, only its write units do (the sequencer lock has no such policy).\n`,
  ];
  parts.push(
    table(
      [
        "implementation",
        "hottest item",
        "WCU on it per event",
        "events/s by WCU",
        "events/s by lease hold",
        "limit (wait, retry)",
        "limit with supersede",
      ],
      sequentialHotKeyLimits(report).map((l) => {
        const hold = LEASE_PATHS.has(l.name) ? leaseHoldLimit(report, l.name) : undefined;
        const byWcu = `${l.eventsPerSecond} (WCU)`;
        return [
          l.name,
          l.hottestRole,
          l.wcuOnHotItem,
          l.eventsPerSecond,
          hold ?? "–",
          hold !== undefined && hold < l.eventsPerSecond ? `${hold} (lease)` : byWcu,
          l.name === "sequencer-lock" ? "–" : byWcu,
        ];
      }),
    ),
  );
  const contended = contendedHotKeyLimits(report);
  if (contended.length > 0) {
    parts.push(
      `\nUnder contention (section 3: ${report.meta.options.hotKeyVersions} versions at once, ${report.meta.options.hotKeyWorkers} workers; refused claims, waits' retries and superseded commits included), write units per version on the hottest item:\n`,
    );
    parts.push(
      table(
        ["run (busy policy)", "hottest item", "WCU per version", "versions/s by WCU"],
        contended.map((l: HotKeyLimit) => [l.name, l.hottestRole, l.wcuOnHotItem, l.eventsPerSecond]),
      ),
    );
  }
  return parts.join("\n");
}

/** The targets of the latency mode and the wrapper path. */
export function lambdaPathTargets(report: Report): Target[] {
  const out: Target[] = [];
  const ref = referenceRun(report);
  if (ref) {
    const at = `at ${ref.oneWayMs} ms one way`;
    const ratio = (name: string, limit: number, label: string) => {
      const r = ref.rows[name];
      if (r)
        out.push({
          target: `${label} p50 ≤ ${limit}× a raw conditional put's, ${at}`,
          met: r.ratioP50.median <= limit,
          measured: `${r.p50Ms.median} / ${ref.rows.rawWrite?.p50Ms.median} ms (medians); per repetition ${fmt(r.ratioP50)}×`,
        });
    };
    ratio("inline", 1.1, "inline `apply`");
    ratio("inline-run", 2.1, "`run` on inline state");
  }
  for (const run of report.injectedLatency ?? []) {
    const pt = run.rows.powertools?.p50Ms.median;
    if (pt === undefined) continue;
    const ours = OUR_PATHS.filter((n) => run.rows[n]);
    const above = ours.filter((n) => (run.rows[n]?.p50Ms.median ?? 0) >= pt);
    out.push({
      target: `every path of ours below Powertools' p50 at ${run.oneWayMs} ms one way`,
      met: above.length === 0,
      measured: `Powertools ${pt} ms; ${ours.map((n) => `${n} ${run.rows[n]?.p50Ms.median}`).join(", ")}${above.length ? `; not below: ${above.join(", ")}` : ""}`,
    });
  }
  out.push(...wrapperTargets(report));
  return out;
}

function wrapperTargets(report: Report): Target[] {
  const out: Target[] = [];
  const conditions: [string, WrapperResults | undefined][] = [
    ["on the loopback", report.wrappers],
    ...(report.injectedLatency ?? []).map(
      (r) => [`at ${r.oneWayMs} ms one way`, r.wrappers] as [string, WrapperResults],
    ),
  ];
  for (const [label, results] of conditions) {
    for (const [trigger, rows] of Object.entries(results ?? {})) {
      for (const mode of ["apply", "run"]) {
        const w = rows?.[`wrapper ${mode}`];
        if (!w?.overBareP50) continue;
        out.push({
          target: `${trigger} wrapper (${mode}) p50 ≤ ${WRAPPER_TARGET}× the bare guard's, ${label}`,
          met: w.overBareP50.median <= WRAPPER_TARGET,
          measured: `${fmt(w.overBareP50)}× (${signedPct(w.overBareP50.median - 1)}); CPU ${w.overBareCpu}×`,
        });
      }
    }
  }
  return out;
}
