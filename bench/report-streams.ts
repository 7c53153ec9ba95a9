import type { Spread } from "./stats.js";
import type { StreamCost, StreamResults, StreamRow } from "./stream-path.js";
import type { Target } from "./target.js";

/** What `--json` prints of the stream path (empty objects when it was not measured). */
export interface StreamsJson {
  /** `<source> <row>` → per record: requests and WCU of a new batch and of its redelivery. */
  cost: Record<string, { new: number; duplicate: number; newWcu: number; duplicateWcu: number }>;
  /** Per condition (`loopback`, `<n>ms`), source and row: one shard's figures. */
  runs: Record<string, Record<string, Record<string, StreamRowJson>>>;
}

export interface StreamRowJson {
  recordsPerSecond: number;
  msPerRecord: number;
  requestsPerRecord: number;
  wcuPerRecord: number;
  exactlyOnce: boolean;
  outOfOrder: number;
}

export function streamsJson(streams: StreamResults | undefined): StreamsJson {
  const cost: StreamsJson["cost"] = {};
  for (const [name, c] of Object.entries(streams?.cost ?? {})) {
    cost[name] = {
      new: c.newRequests,
      duplicate: c.duplicateRequests,
      newWcu: c.newWcu,
      duplicateWcu: c.duplicateWcu,
    };
  }
  const runs: StreamsJson["runs"] = {};
  for (const [condition, bySource] of Object.entries(streams?.runs ?? {})) {
    runs[condition] = Object.fromEntries(
      Object.entries(bySource).map(([source, rows]) => [
        source,
        Object.fromEntries(
          Object.entries(rows ?? {}).map(([name, r]) => [
            name,
            {
              recordsPerSecond: r.recordsPerSecond.median,
              msPerRecord: r.msPerRecord,
              requestsPerRecord: r.requestsPerRecord,
              wcuPerRecord: r.wcuPerRecord,
              exactlyOnce: r.exactlyOnce,
              outOfOrder: r.outOfOrder,
            },
          ]),
        ),
      ]),
    );
  }
  return { cost, runs };
}

const fmt = (s: Spread) => `${s.median} (${s.min}–${s.max})`;

function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

const describe = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([cmd, n]) => `${cmd} ${n}`)
    .join(" + ") || "none";

/** Section 9: cost per record beside SQS, then one table per condition. */
export function renderStreams(streams: StreamResults): string {
  const first = Object.values(Object.values(streams.runs)[0] ?? {})[0];
  const any = first ? Object.values(first)[0] : undefined;
  const shape = any ? `batches of ${any.batch} records over ${any.subjects} subjects` : "";
  const parts = [
    `### 9. The stream path: one shard, ${shape} (bench/stream-path.ts)\n`,
    "Per source, each row on its own tables, one batch in flight (as Lambda reads a shard), interleaved batch by batch. The user handler body is the same in every row: one PutItem of the record's row (`apply`: the same row folded into the commit with `ctx.atCommit(sink.atomicPut(…))`). Ours: the stream wrapper on a DynamoDB state table (`DynamoDBStore`), default keys (subject the partition key or item, position the sequence number), default concurrency (up to 100 subjects' lanes at once). Rows named `… newestPerSubject` use that opt-in: only each subject's newest record of a batch runs and writes its row, the older ones end stale (for handlers where the newest state wins; not a ledger's). Powertools: `processPartialResponse` with a `BatchProcessor` and the record handler made idempotent (`makeIdempotent`, `DynamoDBPersistenceLayer`, key `eventID`); `powertools` is its default (every record of the batch at once), `powertools sequential` is `processInParallel: false`.",
    "\n#### Requests and capacity per record, beside the SQS path (loopback)\n",
    "A new batch, then the same batch again (Lambda's redelivery). SQS: the same payloads as application messages through `sqsHandler` (`messages: \"accept\"`, subject and a position per subject, as on the streams), same store, same handler. WCU from DynamoDB's ConsumedCapacity; a cancelled transaction (`apply`'s redelivery) at its full price, an upper bound (bench/capacity.ts).\n",
    table(
      [
        "source",
        "row",
        "new: requests/record",
        "new: by command",
        "new: WCU + RCU/record",
        "redelivered: requests/record",
        "redelivered: WCU/record",
        "handler runs/record (both deliveries)",
      ],
      Object.entries(streams.cost).map(([key, c]: [string, StreamCost]) => {
        const [source, ...name] = key.split(" ");
        return [
          source ?? "",
          name.join(" "),
          c.newRequests,
          describe(c.newByCommand),
          `${c.newWcu} + ${c.newRcu}`,
          c.duplicateRequests,
          c.duplicateWcu,
          c.handlerRunsPerRecord,
        ];
      }),
    ),
  ];
  for (const [condition, bySource] of Object.entries(streams.runs)) {
    parts.push(
      `\n#### ${condition === "loopback" ? "on the loopback" : `at ${condition.replace("ms", " ms")} one way`}\n`,
    );
    const rows: (string | number)[][] = [];
    for (const [source, byRow] of Object.entries(bySource)) {
      for (const [name, r] of Object.entries(byRow ?? {}) as [string, StreamRow][]) {
        rows.push([
          source,
          name,
          fmt(r.recordsPerSecond),
          fmt(r.throughputVsOursRun),
          fmt(r.batchP50Ms),
          r.msPerRecord,
          r.requestsPerRecord,
          `${r.wcuPerRecord} + ${r.rcuPerRecord}`,
          r.cpuMsPerRecord,
          r.exactlyOnce ? "yes" : "**no**",
          r.outOfOrder,
        ]);
      }
    }
    parts.push(
      table(
        [
          "source",
          "row",
          "records/s per shard",
          "× our run wrapper",
          "batch p50 ms",
          "p50 ms/record",
          "requests/record",
          "WCU + RCU/record",
          "CPU ms/record",
          "exactly once",
          "out of subject order",
        ],
        rows,
      ),
    );
  }
  parts.push(
    "\nrecords/s: the measured batches' records over their summed wall time, median of the repetitions (min–max); × our run wrapper: over the `run` row of the same source and repetition. p50 ms/record: the batch's p50 over its records. exactly once: every record's row present and written once, the handler run once per record (`newestPerSubject` rows: each subject's newest record per batch, and no other row). Out of subject order: effects acknowledged after an effect of a later record of the same partition key (item).",
  );
  return parts.join("\n");
}

/** The issue's requirement: a stream record costs what an SQS message costs, same handler, same store. */
export function streamTargets(streams: StreamResults | undefined): Target[] {
  if (!streams) return [];
  const out: Target[] = [];
  for (const mode of ["run", "apply"]) {
    const sqs = streams.cost[`sqs sqsHandler ${mode}`];
    if (!sqs) continue;
    for (const [source, wrapper] of [
      ["kinesis", "kinesisHandler"],
      ["dynamodb", "dynamodbStreamHandler"],
    ] as const) {
      const s = streams.cost[`${source} ${wrapper} ${mode}`];
      if (!s) continue;
      const same =
        s.newRequests === sqs.newRequests &&
        s.newWcu === sqs.newWcu &&
        s.duplicateRequests === sqs.duplicateRequests &&
        s.duplicateWcu === sqs.duplicateWcu;
      out.push({
        target: `${wrapper} (${mode}): requests and WCU per record = the SQS path's (new, redelivered)`,
        met: same,
        measured: `${s.newRequests} / ${s.newWcu} WCU, redelivered ${s.duplicateRequests} / ${s.duplicateWcu} WCU; SQS ${sqs.newRequests} / ${sqs.newWcu} WCU, redelivered ${sqs.duplicateRequests} / ${sqs.duplicateWcu} WCU`,
      });
    }
  }
  const all = Object.values(streams.runs).flatMap((bySource) =>
    Object.values(bySource).flatMap((rows) => Object.entries(rows ?? {})),
  );
  const ours = all.filter(([name]) => !name.startsWith("powertools"));
  out.push({
    target: "stream wrappers: every record's effect exactly once, in subject order, in every run",
    met: ours.every(([, r]) => r.exactlyOnce && r.outOfOrder === 0),
    measured: `${ours.filter(([, r]) => r.exactlyOnce && r.outOfOrder === 0).length}/${ours.length} runs clean`,
  });
  return out;
}
