import { PassThrough } from "node:stream";
import { beforeAll, describe, expect, inject, it } from "vitest";
import type { Report } from "../bench/harness.js";
import { main } from "../bench/main.js";
import type { BenchJson } from "../bench/report.js";

/*
 * The benchmark harness in --quick mode on the suite's DynamoDB Local: the compact JSON shape, the
 * request budget, and correctness. Functional checks only: nothing here depends on how fast anything ran.
 */
describe("bench --quick --json", () => {
  let json: BenchJson;
  let report: Report;

  beforeAll(async () => {
    let stdout = "";
    report = await main(["--quick", "--json", "--endpoint", inject("dynamodbEndpoint")], {
      stdout: (text) => {
        stdout += text;
      },
      stderr: new PassThrough(),
    });
    json = JSON.parse(stdout) as BenchJson;
  }, 600_000);

  it("prints exactly the compact JSON shape", () => {
    expect(Object.keys(json).sort()).toEqual([
      "capacityPerEvent",
      "costPerMillion",
      "hotKey",
      "injectedLatency",
      "overheadRatio",
      "requestsPerEvent",
      "scale",
      "streams",
      "throughput",
      "wrappers",
    ]);
    for (const counts of Object.values(json.requestsPerEvent)) {
      expect(Object.keys(counts).sort()).toEqual(["duplicate", "failed", "new", "stale"]);
      for (const n of Object.values(counts)) expect(Number.isFinite(n)).toBe(true);
    }
    expect(Object.keys(json.overheadRatio)).toEqual(
      expect.arrayContaining(["ours", "ours-apply", "powertools"]),
    );
    for (const ratio of Object.values(json.overheadRatio)) {
      expect(Object.keys(ratio).sort()).toEqual(["p50", "p99"]);
      expect(ratio.p50).toBeGreaterThan(0);
      expect(ratio.p99).toBeGreaterThan(0);
    }
    expect(Object.keys(json.hotKey)).toEqual(
      expect.arrayContaining([
        "ours-wait",
        "ours-retry",
        "ours-supersede",
        "ours-apply-wait",
        "ours-apply-retry",
        "ours-apply-supersede",
        "powertools",
        "sequencer-lock",
      ]),
    );
    for (const h of Object.values(json.hotKey)) {
      expect(Object.keys(h).sort()).toEqual(["correct", "handlerRuns", "staleRuns", "waitMs"]);
      expect(typeof h.correct).toBe("boolean");
    }
    expect(Object.keys(json.throughput)).toEqual(
      expect.arrayContaining([
        "ours",
        "ours-apply",
        "powertools",
        "get-then-put",
        "conditional-put",
        "sequencer-lock",
        "inline",
        "inline-wrapper-apply",
        "inline-run",
        "rawWrite",
      ]),
    );
    // Capacity and cost per outcome, for every implementation of the requests scenario.
    expect(Object.keys(json.capacityPerEvent).sort()).toEqual(Object.keys(json.requestsPerEvent).sort());
    for (const [name, byKind] of Object.entries(json.capacityPerEvent)) {
      expect(Object.keys(byKind).sort(), name).toEqual(["duplicate", "failed", "new", "stale"]);
      for (const c of Object.values(byKind)) expect(Object.keys(c).sort()).toEqual(["rcu", "wcu"]);
      expect(Object.keys(json.costPerMillion[name] ?? {}).sort(), name).toEqual([
        "duplicate",
        "failed",
        "new",
        "stale",
      ]);
    }
    for (const byWorkers of Object.values(json.throughput)) {
      expect(Object.keys(byWorkers).sort()).toEqual(["1", "16", "4"]);
      for (const eps of Object.values(byWorkers)) expect(eps).toBeGreaterThan(0);
    }
  });

  it("ours stays within the request budget: new ≤ 2 including the effect, duplicate 1, stale 1", () => {
    const ours = json.requestsPerEvent.ours;
    expect(ours?.new).toBeLessThanOrEqual(2);
    expect(ours?.duplicate).toBe(1);
    expect(ours?.stale).toBe(1);
    expect(report.requestsPerEvent.ours?.breakdown.new).toEqual({ UpdateItem: 1, TransactWriteItems: 1 });
    // Powertools as its design says: put + update around the effect's own write.
    expect(json.requestsPerEvent.powertools?.new).toBe(3);
    expect(json.requestsPerEvent.powertools?.duplicate).toBe(1);
  });

  it("ours-apply: new = 1 request including the DynamoDB effect, duplicate 1, stale 1, a failure before it 0", () => {
    expect(json.requestsPerEvent["ours-apply"]).toEqual({ new: 1, duplicate: 1, stale: 1, failed: 0 });
    const breakdown = report.requestsPerEvent["ours-apply"]?.breakdown;
    expect(breakdown?.new).toEqual({ TransactWriteItems: 1 });
    expect(breakdown?.duplicate).toEqual({ TransactWriteItems: 1 });
    expect(breakdown?.stale).toEqual({ TransactWriteItems: 1 });
    expect(report.requestsPerEvent["ours-apply"]?.correctness.ok).toBe(true);
  });

  it("ours never duplicates an effect nor leaves a stale final result, in any scenario", () => {
    expect(report.requestsPerEvent.ours?.correctness.ok).toBe(true);
    for (const name of ["ours-wait", "ours-retry", "ours-supersede"]) {
      expect(json.hotKey[name]?.correct, name).toBe(true);
      expect(report.hotKey[name]?.finalVersion, name).toBe(50);
    }
    for (const [workers, run] of Object.entries(report.throughput.ours ?? {})) {
      expect(run.correctness.ok, `throughput × ${workers}`).toBe(true);
    }
    expect(report.storm.ours?.correctness).toMatchObject({ duplicatedEffects: 0, staleFinal: 0, missing: 0 });
  });

  it("ours-apply never duplicates an effect nor leaves a stale final result, in any scenario", () => {
    for (const name of ["ours-apply-wait", "ours-apply-retry", "ours-apply-supersede"]) {
      expect(json.hotKey[name]?.correct, name).toBe(true);
      expect(report.hotKey[name]?.finalVersion, name).toBe(50);
      expect(report.hotKey[name]?.correctness.duplicatedEffects, name).toBe(0);
    }
    for (const [workers, run] of Object.entries(report.throughput["ours-apply"] ?? {})) {
      expect(run.correctness.ok, `throughput × ${workers}`).toBe(true);
      expect(run.requestsPerEvent, `throughput × ${workers}`).toBe(1);
    }
    // Failures after the effect are redelivered: the failed computation wrote nothing, the retry writes once.
    expect(report.storm["ours-apply"]?.outcomes.failed).toBeGreaterThan(0);
    expect(report.storm["ours-apply"]?.correctness).toMatchObject({
      duplicatedEffects: 0,
      staleFinal: 0,
      missing: 0,
    });
  });

  it("inline: new = 1 UpdateItem and 1 WCU including the effect row; duplicate 1; stale 1; run = 2 plain writes", () => {
    expect(json.requestsPerEvent.inline).toEqual({ new: 1, duplicate: 1, stale: 1, failed: 0 });
    const inline = report.requestsPerEvent.inline;
    expect(inline?.breakdown.new).toEqual({ UpdateItem: 1 });
    expect(inline?.breakdown.duplicate).toEqual({ UpdateItem: 1 });
    expect(inline?.breakdown.stale).toEqual({ UpdateItem: 1 });
    // The row (effect, position, fence, committed identity) is under 1 KB: one write unit, no read.
    expect(json.capacityPerEvent.inline?.new).toEqual({ wcu: 1, rcu: 0 });
    // A refused write is billed as a write of the old row: 1 WCU (estimated: DynamoDB Local reports none).
    expect(json.capacityPerEvent.inline?.duplicate).toEqual({ wcu: 1, rcu: 0 });
    expect(json.capacityPerEvent.inline?.stale).toEqual({ wcu: 1, rcu: 0 });
    expect(report.requestsPerEvent["inline-run"]?.breakdown.new).toEqual({ UpdateItem: 2 });
    // The separate-state forms pay a transaction: more write units for the same event.
    expect(json.capacityPerEvent.ours?.new.wcu).toBeGreaterThan(json.capacityPerEvent.inline?.new.wcu ?? 0);
    expect(json.capacityPerEvent["ours-apply"]?.new.wcu).toBeGreaterThan(1);
    expect(json.costPerMillion.inline?.new).toBeCloseTo(0.625, 3);
    for (const [workers, run] of Object.entries(report.throughput.inline ?? {})) {
      expect(run.requestsPerEvent, `throughput × ${workers}`).toBe(1);
      expect(run.wcuPerEvent, `throughput × ${workers}`).toBe(1);
    }
  });

  it("inline through the Lambda wrapper (s3Handler): apply costs what the bare guard.apply costs, run what guard.run costs", () => {
    expect(json.requestsPerEvent["inline-wrapper-apply"]).toEqual({
      new: 1,
      duplicate: 1,
      stale: 1,
      failed: 0,
    });
    const apply = report.requestsPerEvent["inline-wrapper-apply"];
    expect(apply?.breakdown.new).toEqual({ UpdateItem: 1 });
    expect(json.capacityPerEvent["inline-wrapper-apply"]?.new).toEqual({ wcu: 1, rcu: 0 });
    expect(json.requestsPerEvent["inline-wrapper-run"]).toEqual(json.requestsPerEvent["inline-run"]);
    expect(report.requestsPerEvent["inline-wrapper-run"]?.breakdown.new).toEqual({ UpdateItem: 2 });
    for (const [workers, run] of Object.entries(report.throughput["inline-wrapper-apply"] ?? {})) {
      expect(run.correctness.ok, `throughput × ${workers}`).toBe(true);
      expect(run.requestsPerEvent, `throughput × ${workers}`).toBe(1);
      expect(run.wcuPerEvent, `throughput × ${workers}`).toBe(1);
    }
    for (const impl of ["inline-wrapper-apply", "inline-wrapper-run"]) {
      expect(report.requestsPerEvent[impl]?.correctness.ok, impl).toBe(true);
      expect(report.latency[impl]?.p50Ms.median, impl).toBeGreaterThan(0);
      expect(report.storm[impl]?.correctness, impl).toMatchObject({
        duplicatedEffects: 0,
        staleFinal: 0,
        missing: 0,
      });
    }
    // A failure after the effect is thrown for Lambda's retry: the storm redelivers it, as for the bare guard.
    expect(report.storm["inline-wrapper-apply"]?.outcomes.failed).toBeGreaterThan(0);
  });

  it("inline never duplicates an effect nor leaves a stale final result, in any scenario", () => {
    expect(report.requestsPerEvent.inline?.correctness.ok).toBe(true);
    expect(report.requestsPerEvent["inline-run"]?.correctness.ok).toBe(true);
    for (const name of ["inline-wait", "inline-retry", "inline-supersede"]) {
      expect(json.hotKey[name]?.correct, name).toBe(true);
      expect(report.hotKey[name]?.finalVersion, name).toBe(50);
    }
    for (const impl of ["inline", "inline-run"]) {
      for (const [workers, run] of Object.entries(report.throughput[impl] ?? {})) {
        expect(run.correctness.ok, `${impl} throughput × ${workers}`).toBe(true);
      }
      expect(report.storm[impl]?.correctness, impl).toMatchObject({
        duplicatedEffects: 0,
        staleFinal: 0,
        missing: 0,
      });
    }
  });

  it("latency mode: every implementation behind the proxy, with what it adds over a raw conditional put", () => {
    // Quick mode: one run at 4 ms one way. Figures are not checked here (a loaded machine moves them), only their shape.
    expect(Object.keys(json.injectedLatency)).toEqual(["4"]);
    const at4 = json.injectedLatency["4"] ?? {};
    expect(Object.keys(at4)).toEqual(
      expect.arrayContaining(["rawWrite", "inline", "inline-run", "ours", "ours-apply", "powertools"]),
    );
    expect(at4.rawWrite?.addedP50Ms).toBe(0);
    for (const [name, row] of Object.entries(at4)) {
      expect(Object.keys(row).sort(), name).toEqual(["addedP50Ms", "addedP99Ms", "p50", "p99", "ratioP50"]);
      // Every request pays at least the round trip the proxy adds (2 × 4 ms).
      expect(row.p50, name).toBeGreaterThanOrEqual(8);
    }
    const run = report.injectedLatency?.[0];
    expect(run?.rows.inline?.requestsPerEvent).toBe(1);
    expect(run?.rows["inline-run"]?.requestsPerEvent).toBe(2);
    expect(run?.rows.powertools?.requestsPerEvent).toBe(3);
  });

  it("wrapper path: S3, SQS batch of 10, EventBridge; apply costs one request per event, run two, Powertools three", () => {
    for (const condition of ["loopback", "4ms"]) {
      const byTrigger = json.wrappers[condition] ?? {};
      expect(Object.keys(byTrigger).sort(), condition).toEqual(["eventbridge", "s3", "sqs"]);
      for (const [trigger, rows] of Object.entries(byTrigger)) {
        const at = `${condition} ${trigger}`;
        expect(Object.keys(rows), at).toEqual([
          "unguarded",
          "guard.apply",
          "guard.run",
          "wrapper apply",
          "wrapper run",
          "powertools",
        ]);
        expect(rows["wrapper apply"]?.requestsPerEvent, at).toBe(1);
        expect(rows["wrapper apply"]?.wcuPerEvent, at).toBe(1);
        expect(rows["wrapper run"]?.requestsPerEvent, at).toBe(2);
        expect(rows.powertools?.requestsPerEvent, at).toBe(3);
        expect(rows["wrapper apply"]?.overBare, at).toBeGreaterThan(0);
      }
    }
    for (const [trigger, rows] of Object.entries(report.wrappers ?? {})) {
      for (const [name, row] of Object.entries(rows ?? {}))
        expect(row.correct, `${trigger} ${name}`).toBe(true);
    }
    expect(report.wrappers?.sqs?.["wrapper apply"]?.batch).toBe(10);
  });

  it("stream path: one shard through kinesisHandler, dynamodbStreamHandler and Powertools' BatchProcessor, every record once", () => {
    const { cost, runs } = json.streams;
    // A stream record costs what the same handler's SQS message costs: requests and WCU, new and redelivered.
    for (const mode of ["run", "apply"]) {
      const sqs = cost[`sqs sqsHandler ${mode}`];
      expect(sqs?.new, mode).toBeGreaterThan(0);
      expect(cost[`kinesis kinesisHandler ${mode}`], mode).toEqual(sqs);
      expect(cost[`dynamodb dynamodbStreamHandler ${mode}`], mode).toEqual(sqs);
    }
    expect(cost["kinesis kinesisHandler run"]).toMatchObject({ new: 3, duplicate: 1 });
    expect(cost["kinesis kinesisHandler apply"]).toMatchObject({ new: 1, duplicate: 1 });
    expect(cost["kinesis powertools"]).toMatchObject({ new: 3, duplicate: 1 });
    // The redelivered batch ran no handler of mode run (apply computes before its one request).
    expect(report.streams?.cost["kinesis kinesisHandler run"]?.handlerRunsPerRecord).toBe(1);
    expect(Object.keys(runs)).toEqual(["loopback", "4ms"]);
    for (const [condition, bySource] of Object.entries(runs)) {
      expect(Object.keys(bySource), condition).toEqual(["kinesis", "dynamodb"]);
      for (const [source, rows] of Object.entries(bySource)) {
        const wrapper = source === "kinesis" ? "kinesisHandler" : "dynamodbStreamHandler";
        expect(Object.keys(rows), `${condition} ${source}`).toEqual([
          `${wrapper} run`,
          `${wrapper} apply`,
          `${wrapper} run newestPerSubject`,
          `${wrapper} apply newestPerSubject`,
          "powertools",
          "powertools sequential",
        ]);
        for (const [name, row] of Object.entries(rows)) {
          const at = `${condition} ${source} ${name}`;
          expect(row.exactlyOnce, at).toBe(true);
          expect(row.requestsPerRecord, at).toBeGreaterThan(0);
          expect(row.recordsPerSecond, at).toBeGreaterThan(0);
        }
        // Ours keeps each partition key's (item's) records in shard order.
        expect(rows[`${wrapper} run`]?.outOfOrder, `${condition} ${source}`).toBe(0);
        expect(rows[`${wrapper} apply`]?.outOfOrder, `${condition} ${source}`).toBe(0);
        expect(rows[`${wrapper} apply`]?.requestsPerRecord, `${condition} ${source}`).toBe(1);
      }
    }
  });

  it("scale on paper: monthly cost from the measured units and latency, and each hot key's write units by table", () => {
    expect(json.scale.inline?.["1000"]?.dynamodb).toBeGreaterThan(0);
    // 1 WCU per event at 1,000 events/s for a 730-hour month: 2,628 million WRU at $0.625 per million.
    expect(json.scale.inline?.["1000"]?.dynamodb).toBe(1643);
    expect(json.scale.ours?.["10000"]?.total).toBeGreaterThan(json.scale.inline?.["10000"]?.total ?? 0);
    expect(report.requestsPerEvent.ours?.newWcuByRole).toEqual({ state: 3, out: 2 });
    expect(report.requestsPerEvent.inline?.newWcuByRole).toEqual({ out: 1 });
    expect(report.hotKey["inline-supersede"]?.wcuPerVersionByRole?.out).toBeGreaterThanOrEqual(1);
  });

  it("supersede never waits on the hot key", () => {
    expect(json.hotKey["ours-supersede"]?.waitMs).toBe(0);
    expect(report.hotKey["ours-supersede"]?.redeliveries).toBe(0);
  });

  it("the checks can fail: they catch the baselines' duplicates and stale results", () => {
    // The storm delivers every newest version twice: an unguarded handler applies it twice.
    expect(report.storm.unguarded?.correctness.duplicatedEffects).toBeGreaterThan(0);
    // Powertools treats an older version as a new event and overwrites the newer result with it.
    expect(report.requestsPerEvent.powertools?.correctness.staleFinal).toBeGreaterThan(0);
    // A separate (non-atomic) effect is applied again when the handler fails after it.
    expect(report.storm["ours-put"]?.correctness.duplicatedEffects).toBeGreaterThan(0);
  });
});
