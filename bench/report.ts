import type { Report } from "./harness.js";
import { dynamodbCostPerMillionUsd, lambdaCostPerMillionUsd, PRICES } from "./prices.js";
import { lambdaPathTargets, renderLambdaPath } from "./report-lambda.js";
import { renderStreams, type StreamsJson, streamsJson, streamTargets } from "./report-streams.js";
import { RATES, scaleRows } from "./scale.js";
import { round } from "./stats.js";
import type { Target } from "./target.js";

type Kind = "new" | "duplicate" | "stale" | "failed";
const KINDS: Kind[] = ["new", "duplicate", "stale", "failed"];

/** What `--json` prints: a stable shape for scripts, plus capacity and cost per event. */
export interface BenchJson {
  requestsPerEvent: Record<string, { new: number; duplicate: number; stale: number; failed: number }>;
  overheadRatio: Record<string, { p50: number; p99: number }>;
  hotKey: Record<string, { handlerRuns: number; staleRuns: number; waitMs: number; correct: boolean }>;
  throughput: Record<string, Record<string, number>>;
  /** Write and read units per event of each kind (DynamoDB's ConsumedCapacity; refused writes as AWS bills them). */
  capacityPerEvent: Record<string, Record<Kind, { wcu: number; rcu: number }>>;
  /** USD per million events of each kind at DynamoDB on-demand prices (bench/prices.ts), DynamoDB only. */
  costPerMillion: Record<string, Record<Kind, number>>;
  /** Per one-way delay (ms), per implementation: p50 and p99 (ms) and what they add over a raw conditional put. */
  injectedLatency: Record<
    string,
    Record<string, { p50: number; p99: number; addedP50Ms: number; addedP99Ms: number; ratioP50: number }>
  >;
  /** Per condition (`loopback`, `<n>ms`), trigger and row: the wrapper path per event. */
  wrappers: Record<string, Record<string, Record<string, WrapperJson>>>;
  /** Per implementation: USD per month at each rate (events/s), DynamoDB + Lambda, new events. */
  scale: Record<string, Record<string, { dynamodb: number; lambda: number; total: number }>>;
  /** The stream path (bench/stream-path.ts): cost per record beside SQS, and one shard's figures per condition. */
  streams: StreamsJson;
}

export interface WrapperJson {
  requestsPerEvent: number;
  wcuPerEvent: number;
  msPerEvent: number;
  addedMsPerEvent: number;
  cpuMsPerEvent: number;
  /** Wrapper rows: p50 over the bare guard's in the same mode. */
  overBare?: number;
}

/** DynamoDB cost per million events of each kind, USD. */
export function costPerMillion(report: Report): BenchJson["costPerMillion"] {
  const out: BenchJson["costPerMillion"] = {};
  for (const [name, r] of Object.entries(report.requestsPerEvent)) {
    if (!r.capacity) continue;
    out[name] = Object.fromEntries(
      KINDS.map((k) => [k, round(dynamodbCostPerMillionUsd(r.capacity[k].wcu, r.capacity[k].rcu), 4)]),
    ) as Record<Kind, number>;
  }
  return out;
}

export function toBenchJson(report: Report): BenchJson {
  const requestsPerEvent: BenchJson["requestsPerEvent"] = {};
  for (const [name, r] of Object.entries(report.requestsPerEvent)) {
    requestsPerEvent[name] = { new: r.new, duplicate: r.duplicate, stale: r.stale, failed: r.failed };
  }
  const overheadRatio: BenchJson["overheadRatio"] = {};
  for (const [name, l] of Object.entries(report.latency)) {
    if (name !== "unguarded") overheadRatio[name] = { p50: l.ratioP50.median, p99: l.ratioP99.median };
  }
  const hotKey: BenchJson["hotKey"] = {};
  for (const [name, h] of Object.entries(report.hotKey)) {
    hotKey[name] = {
      handlerRuns: h.handlerRuns,
      staleRuns: h.staleRuns,
      waitMs: h.waitMs,
      correct: h.correct,
    };
  }
  const throughput: BenchJson["throughput"] = {};
  for (const [name, byWorkers] of Object.entries(report.throughput)) {
    throughput[name] = Object.fromEntries(Object.entries(byWorkers).map(([w, r]) => [w, r.eventsPerSecond]));
  }
  throughput.rawWrite = rawWriteRate(report);
  const capacityPerEvent: BenchJson["capacityPerEvent"] = {};
  for (const [name, r] of Object.entries(report.requestsPerEvent)) {
    if (!r.capacity) continue;
    capacityPerEvent[name] = Object.fromEntries(
      KINDS.map((k) => [k, { wcu: r.capacity[k].wcu, rcu: r.capacity[k].rcu }]),
    ) as Record<Kind, { wcu: number; rcu: number }>;
  }
  return {
    requestsPerEvent,
    overheadRatio,
    hotKey,
    throughput,
    capacityPerEvent,
    costPerMillion: costPerMillion(report),
    ...lambdaPathJson(report),
    streams: streamsJson(report.streams),
  };
}

/** The JSON of the latency mode, the wrapper path and the scale on paper (empty objects when not measured). */
function lambdaPathJson(report: Report): Pick<BenchJson, "injectedLatency" | "wrappers" | "scale"> {
  const injectedLatency: BenchJson["injectedLatency"] = {};
  for (const run of report.injectedLatency ?? []) {
    injectedLatency[String(run.oneWayMs)] = Object.fromEntries(
      Object.entries(run.rows).map(([name, r]) => [
        name,
        {
          p50: r.p50Ms.median,
          p99: r.p99Ms.median,
          addedP50Ms: r.addedP50Ms.median,
          addedP99Ms: r.addedP99Ms.median,
          ratioP50: r.ratioP50.median,
        },
      ]),
    );
  }
  const wrappers: BenchJson["wrappers"] = {};
  const conditions = [
    ["loopback", report.wrappers] as const,
    ...(report.injectedLatency ?? []).map((r) => [`${r.oneWayMs}ms`, r.wrappers] as const),
  ];
  for (const [label, results] of conditions) {
    if (!results) continue;
    wrappers[label] = Object.fromEntries(
      Object.entries(results).map(([trigger, rows]) => [
        trigger,
        Object.fromEntries(
          Object.entries(rows ?? {}).map(([name, w]) => [
            name,
            {
              requestsPerEvent: w.requestsPerEvent,
              wcuPerEvent: w.wcuPerEvent,
              msPerEvent: w.msPerEvent,
              addedMsPerEvent: w.addedMsPerEvent,
              cpuMsPerEvent: w.cpuMsPerEvent,
              ...(w.overBareP50 ? { overBare: w.overBareP50.median } : {}),
            },
          ]),
        ),
      ]),
    );
  }
  const scale: BenchJson["scale"] = {};
  for (const row of scaleRows(report)) {
    scale[row.name] = Object.fromEntries(
      RATES.map((rate) => {
        const c = row.perMonth[String(rate)];
        return [
          String(rate),
          { dynamodb: c?.dynamodbUsd ?? 0, lambda: c?.lambdaUsd ?? 0, total: c?.totalUsd ?? 0 },
        ];
      }),
    );
  }
  return { injectedLatency, wrappers, scale };
}

/** The ceiling per worker count: the mean of the raw runs before and after that block. */
export function rawWriteRate(report: Report): Record<string, number> {
  return Object.fromEntries(
    Object.entries(report.rawWriteRuns).map(([w, runs]) => [
      w,
      Math.round(runs.reduce((a, r) => a + r.eventsPerSecond, 0) / runs.length),
    ]),
  );
}

/** The targets, for each form of ours: `ours` (guard.run, the lease protocol) and `ours-apply`. */
export function targets(report: Report): Target[] {
  return [
    ...targetsFor(report, {
      impl: "ours",
      label: "ours",
      hotKeyPrefix: "ours-",
      exclude: ["ours-put", "ours-apply"],
    }),
    ...targetsFor(report, {
      impl: "ours-apply",
      label: "ours (apply)",
      hotKeyPrefix: "ours-apply-",
      exclude: [],
    }),
    ...inlineTargets(report),
    ...lambdaPathTargets(report),
    ...streamTargets(report.streams),
  ];
}

/** The inline-state issue's targets: one write per event, its price, and its speed against the raw put. */
export function inlineTargets(report: Report): Target[] {
  const out: Target[] = [];
  const req = report.requestsPerEvent.inline;
  if (req) {
    const c = req.capacity;
    out.push({
      target: "inline: new event = 1 request (one UpdateItem) and 1 WCU",
      met: req.new === 1 && c.new.wcu === 1 && req.breakdown.new.UpdateItem === 1,
      measured: `${req.new} (${describe(req.breakdown.new)}), ${c.new.wcu} WCU + ${c.new.rcu} RCU`,
    });
    out.push({
      target: "inline: duplicate = 1 request, stale = 1 request",
      met: req.duplicate === 1 && req.stale === 1,
      measured: `duplicate ${req.duplicate} (${c.duplicate.wcu} WCU), stale ${req.stale} (${c.stale.wcu} WCU)`,
    });
  }
  const raw = rawWriteRate(report);
  const top = String(Math.max(...Object.keys(raw).map(Number)));
  const ceiling = raw[top];
  const inlineTp = report.throughput.inline?.[top]?.eventsPerSecond;
  if (inlineTp !== undefined && ceiling) {
    out.push({
      target: `inline: throughput at ${top} workers ≥ 85% of the raw conditional put`,
      met: inlineTp >= 0.85 * ceiling,
      measured: `${inlineTp} / ${ceiling} events/s = ${round((100 * inlineTp) / ceiling, 1)}%`,
    });
  }
  const lat = report.latency.inline;
  const rawLat = report.latency.rawWrite;
  if (lat && rawLat) {
    const ratio = lat.p50Ms.median / rawLat.p50Ms.median;
    out.push({
      target: "inline: p50 ≤ 1.2 × a raw conditional put's p50 (same run)",
      met: ratio <= 1.2,
      measured: `${lat.p50Ms.median} / ${rawLat.p50Ms.median} ms = ${round(ratio, 2)}×`,
    });
  }
  return out;
}

function targetsFor(
  report: Report,
  o: {
    /** Key in requestsPerEvent, latency, throughput and storm. */
    impl: string;
    label: string;
    /** Hot-key runs of this form are named `<prefix><busy policy>`... */
    hotKeyPrefix: string;
    /** ...except those starting with one of these. */
    exclude: string[];
  },
): Target[] {
  const out: Target[] = [];
  const { impl, label } = o;
  const req = report.requestsPerEvent[impl];
  if (req) {
    out.push({
      target: `${label}: new event ≤ 2 requests including the DynamoDB effect (atomic commit)`,
      met: req.new <= 2,
      measured: `${req.new} (${describe(req.breakdown.new)})`,
    });
    out.push({
      target: `${label}: duplicate = 1 request`,
      met: req.duplicate === 1,
      measured: `${req.duplicate}`,
    });
    out.push({ target: `${label}: stale = 1 request`, met: req.stale === 1, measured: `${req.stale}` });
  }
  const ours = report.latency[impl];
  const pt = report.latency.powertools;
  if (ours && pt) {
    const below = ours.ratioP50.median <= pt.ratioP50.median;
    const withinSpread = ours.ratioP50.min <= pt.ratioP50.max;
    out.push({
      target: `${label}: p50 overhead ratio not above Powertools' (same run, within the spread of the repetitions)`,
      met: below || withinSpread,
      measured: `${label} ${fmtSpread(ours.ratioP50)} vs Powertools ${fmtSpread(pt.ratioP50)}${below ? "" : withinSpread ? " (above, but within the spread)" : ""}`,
    });
  }
  const sup = report.hotKey[`${o.hotKeyPrefix}supersede`];
  if (sup) {
    out.push({
      target: `${label}, hot key with supersede: no waiting and a correct final result`,
      met: sup.waitMs === 0 && sup.correct,
      measured: `wait ${sup.waitMs} ms, final version ${sup.finalVersion}, correct ${sup.correct}`,
    });
  }
  const raw = rawWriteRate(report);
  const top = String(Math.max(...Object.keys(raw).map(Number)));
  const guarded = report.throughput[impl]?.[top]?.eventsPerSecond;
  const ceiling = raw[top];
  if (guarded !== undefined && ceiling) {
    out.push({
      target: `${label}: guarded throughput at ${top} workers ≥ 45% of the raw conditional-write rate`,
      met: guarded >= 0.45 * ceiling,
      measured: `${guarded} / ${ceiling} events/s = ${round((100 * guarded) / ceiling, 1)}%`,
    });
  }
  const runs = [
    report.requestsPerEvent[impl]?.correctness,
    ...Object.entries(report.hotKey)
      .filter(([n]) => n.startsWith(o.hotKeyPrefix) && !o.exclude.some((x) => n.startsWith(x)))
      .map(([, h]) => h.correctness),
    ...Object.values(report.throughput[impl] ?? {}).map((r) => r.correctness),
    report.storm[impl]?.correctness,
  ].filter((c) => c !== undefined);
  out.push({
    target: `${label}: no duplicated effect, no stale final result, in every run`,
    met: runs.every((c) => c.ok),
    measured: `${runs.filter((c) => c.ok).length}/${runs.length} runs clean`,
  });
  return out;
}

const fmtSpread = (s: { median: number; min: number; max: number }) => `${s.median} (${s.min}–${s.max})`;

function describe(counts: Record<string, number>): string {
  return (
    Object.entries(counts)
      .map(([cmd, n]) => `${cmd} ${n}`)
      .join(" + ") || "none"
  );
}

function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

const cpuCell = (r: { clientCpuMsPerEvent: number; serverCpuMsPerEvent: number | undefined }) =>
  r.serverCpuMsPerEvent === undefined
    ? `${r.clientCpuMsPerEvent} + ?`
    : `${r.clientCpuMsPerEvent} + ${r.serverCpuMsPerEvent} = ${round(r.clientCpuMsPerEvent + r.serverCpuMsPerEvent, 3)}`;

const runsOk = (runs: { correctness: { ok: boolean } }[]) =>
  runs.every((r) => r.correctness.ok) ? "ok" : "NOT ok";

const correctnessCell = (c: { duplicatedEffects: number; staleFinal: number; missing: number }) =>
  c.duplicatedEffects === 0 && c.staleFinal === 0 && c.missing === 0
    ? "ok"
    : [
        c.duplicatedEffects ? `${c.duplicatedEffects} duplicated` : "",
        c.staleFinal ? `${c.staleFinal} stale final` : "",
        c.missing ? `${c.missing} missing` : "",
      ]
        .filter(Boolean)
        .join(", ");

/** All tables, as GitHub markdown (what the CLI prints without --json, and what docs/benchmarks.md quotes). */
export function renderMarkdown(report: Report): string {
  const parts: string[] = [];
  const m = report.meta;
  parts.push(
    `Measured ${m.date} on ${m.nproc} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, DynamoDB Local ${m.dynamodbLocal}; ` +
      `load average ${m.loadAverageStart.join(" ")} at the start, ${m.loadAverageEnd.join(" ")} at the end; ${m.durationS} s in all.`,
  );

  parts.push("### 1. DynamoDB requests per event\n");
  parts.push(
    table(
      ["implementation", "new", "duplicate", "stale", "failed", "new: by command", "correct afterwards"],
      Object.entries(report.requestsPerEvent).map(([name, r]) => [
        name,
        r.new,
        r.duplicate,
        r.stale,
        r.failed,
        describe(r.breakdown.new),
        correctnessCell(r.correctness),
      ]),
    ),
  );

  parts.push(
    `\n### 1b. Capacity and DynamoDB cost per event (on demand, ${PRICES.region}, prices of ${PRICES.date})\n`,
  );
  parts.push(
    "WCU + RCU per event from DynamoDB's ConsumedCapacity; refused writes (which DynamoDB Local does not report) counted as AWS bills them, marked * (bench/capacity.ts). USD per million events of that kind.\n",
  );
  const costs = costPerMillion(report);
  const unit = (c: { wcu: number; rcu: number; estimatedWcu: number }) =>
    `${c.wcu}${c.estimatedWcu > 0 ? "*" : ""} + ${c.rcu}`;
  parts.push(
    table(
      ["implementation", ...KINDS.map((k) => `${k}: WCU + RCU`), ...KINDS.map((k) => `${k}: $/M`)],
      Object.entries(report.requestsPerEvent)
        .filter(([, r]) => r.capacity)
        .map(([name, r]) => [
          name,
          ...KINDS.map((k) => unit(r.capacity[k])),
          ...KINDS.map((k) => `$${costs[name]?.[k] ?? "–"}`),
        ]),
    ),
  );

  parts.push(
    `\n### 2. Latency of a new event (sequential; ${m.options.reps} repetitions × ${m.options.latencyEvents} events)\n`,
  );
  parts.push(
    table(
      [
        "implementation",
        "p50 ms",
        "p99 ms",
        "p50 / unguarded",
        "p99 / unguarded",
        "Lambda ms added (p50)",
        `Lambda $/M added (${PRICES.lambdaMemoryMb} MB)`,
      ],
      Object.entries(report.latency).map(([name, l]) => {
        const added = l.p50Ms.median - (report.latency.unguarded?.p50Ms.median ?? l.p50Ms.median);
        return [
          name,
          fmtSpread(l.p50Ms),
          fmtSpread(l.p99Ms),
          fmtSpread(l.ratioP50),
          fmtSpread(l.ratioP99),
          round(added, 3),
          `$${round(lambdaCostPerMillionUsd(added), 3)}`,
        ];
      }),
    ),
  );
  parts.push(
    "\nmedian of the repetitions (min–max). rawWrite is a bare conditional PutItem (no handler): the floor for one request. Lambda ms added: the p50 over the unguarded handler's, billed per ms at the x86 price.",
  );

  parts.push(
    `\n### 3. Hot key: ${m.options.hotKeyVersions} versions of one key at once, ${m.options.hotKeyWorkers} workers\n`,
  );
  parts.push(
    table(
      [
        "implementation",
        "handler runs",
        "stale runs",
        "wait ms",
        "redeliveries",
        "elapsed ms",
        "final version",
        "correct",
      ],
      Object.entries(report.hotKey).map(([name, h]) => [
        name,
        h.handlerRuns,
        h.staleRuns,
        h.waitMs,
        h.redeliveries,
        h.elapsedMs,
        h.finalVersion ?? "none",
        h.correct ? "yes" : `no (${correctnessCell(h.correctness)})`,
      ]),
    ),
  );

  const raw = rawWriteRate(report);
  const workers = Object.keys(raw);
  parts.push(`\n### 4. Throughput, events/s over ${m.options.events} distinct keys\n`);
  parts.push(
    "rawWrite: mean of the runs right before ours, between ours and ours-apply, right after ours-apply and right after inline (each in brackets); % of raw uses that mean.\n",
  );
  parts.push(
    table(
      [
        "implementation",
        ...workers.map((w) => `${w} worker${w === "1" ? "" : "s"}`),
        "requests/event",
        "WCU + RCU/event",
        `% of raw at ${workers.at(-1)}`,
        `CPU ms/event at ${workers.at(-1)}: client + DynamoDB Local`,
        "load avg (1 min) after each run",
        "correct",
      ],
      [
        ...Object.entries(report.throughput).map(([name, byW]) => {
          const top = byW[workers.at(-1) ?? ""];
          const ceiling = raw[workers.at(-1) ?? ""] ?? 0;
          return [
            name,
            ...workers.map((w) => byW[w]?.eventsPerSecond ?? "–"),
            Object.values(byW)[0]?.requestsPerEvent ?? "–",
            top?.wcuPerEvent !== undefined ? `${top.wcuPerEvent} + ${top.rcuPerEvent}` : "–",
            top && ceiling ? `${round((100 * top.eventsPerSecond) / ceiling, 1)}%` : "–",
            top ? cpuCell(top) : "–",
            workers.map((w) => byW[w]?.loadAverage1m ?? "–").join(" / "),
            Object.values(byW).every((r) => r.correctness.ok)
              ? "ok"
              : Object.entries(byW)
                  .filter(([, r]) => !r.correctness.ok)
                  .map(([w, r]) => `${w}w: ${correctnessCell(r.correctness)}`)
                  .join("; "),
          ];
        }),
        [
          "rawWrite (ceiling)",
          ...workers.map(
            (w) => `${raw[w]} (${report.rawWriteRuns[w]?.map((r) => r.eventsPerSecond).join(", ")})`,
          ),
          1,
          (() => {
            const r = report.rawWriteRuns[workers.at(-1) ?? ""]?.[0];
            return r?.wcuPerEvent !== undefined ? `${r.wcuPerEvent} + ${r.rcuPerEvent}` : "–";
          })(),
          "100%",
          (() => {
            const runs = report.rawWriteRuns[workers.at(-1) ?? ""] ?? [];
            return runs.map(cpuCell).join(", ");
          })(),
          workers
            .map((w) => (report.rawWriteRuns[w] ?? []).map((r) => r.loadAverage1m).join(", "))
            .join(" / "),
          runsOk(Object.values(report.rawWriteRuns).flat()),
        ],
      ],
    ),
  );

  parts.push("\n### 5. Correctness storm: duplicates, reordering and failures after the effect\n");
  parts.push(
    table(
      [
        "implementation",
        "deliveries",
        "handler runs",
        "outcomes",
        "duplicated effects",
        "stale final",
        "missing",
      ],
      Object.entries(report.storm).map(([name, s]) => [
        name,
        s.deliveries,
        s.handlerRuns,
        Object.entries(s.outcomes)
          .map(([o, n]) => `${o} ${n}`)
          .join(", "),
        s.correctness.duplicatedEffects,
        s.correctness.staleFinal,
        s.correctness.missing,
      ]),
    ),
  );

  parts.push(renderLambdaPath(report));
  if (report.streams) parts.push(`\n${renderStreams(report.streams)}`);

  parts.push("\n### Targets\n");
  parts.push(
    table(
      ["target", "met", "measured"],
      targets(report).map((t) => [t.target, t.met ? "met" : "**missed**", t.measured]),
    ),
  );
  return `${parts.join("\n")}\n`;
}

/** JSON of the full report; Maps (scan results kept for the checks) are left out. */
export function reportJson(report: Report): string {
  return JSON.stringify(report, (_k, v) => (v instanceof Map ? undefined : v), 2);
}
