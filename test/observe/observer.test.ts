import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { afterEach, describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import type { Delivery } from "../../src/core/event.js";
import type { GuardOutcome } from "../../src/core/guard.js";
import { COUNTERS, InvocationMetrics } from "../../src/observe/metrics.js";
import { Observer } from "../../src/observe/observer.js";
import { captureOutput } from "../kit/index.js";

const sqsDelivery: Delivery = {
  envelope: "sqs-s3",
  correlationId: "REQ-1",
  recordIndex: 3,
  sqs: {
    messageId: "msg-1",
    receiptHandle: "rh",
    receiveCount: 4,
    messageGroupId: "g1",
    eventSourceArn: "arn:aws:sqs:us-east-1:000000000000:q.fifo",
    attributes: {},
    messageAttributes: {},
  },
};
const event = { subject: "bucket/a.jpg", identity: "0002:created", position: "0002" };

describe("InvocationMetrics (EMF through Powertools)", () => {
  it("prints one EMF line: summed counters, per-record values, the pipeline dimension", () => {
    const o = captureOutput();
    const m = new InvocationMetrics(new Metrics({ namespace: "Tests", serviceName: "svc" }), "thumbnails");
    m.count("processed");
    m.count("processed");
    m.count("duplicate");
    m.receiveCount(1);
    m.receiveCount(3);
    m.handlerDuration(12.4);
    m.flush();
    const [emf, ...rest] = o.emf();
    expect(rest).toEqual([]);
    expect(emf).toMatchObject({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: "Tests",
            Dimensions: [["service", "pipeline"]],
            Metrics: [
              { Name: "processed", Unit: "Count" },
              { Name: "duplicate", Unit: "Count" },
              { Name: "receiveCount", Unit: "Count" },
              { Name: "handlerDuration", Unit: "Milliseconds" },
            ],
          },
        ],
      },
      pipeline: "thumbnails",
      service: "svc",
      processed: 2,
      duplicate: 1,
      receiveCount: [1, 3],
      handlerDuration: 12,
    });
    // Flushed: a second flush prints nothing (and no Powertools "no metrics" warning either).
    m.flush();
    expect(o.lines()).toHaveLength(1);
  });

  it("a batch of 150 records: every duration published, each line with the pipeline dimension", () => {
    const o = captureOutput();
    const m = new InvocationMetrics(new Metrics({ namespace: "Tests", serviceName: "svc" }), "orders");
    m.count("processed", 150);
    for (let i = 0; i < 150; i++) m.handlerDuration(i);
    m.flush();
    const lines = o.emf();
    // Powertools publishes by itself at 100 values of one metric: before the fix, the 100th value published the line
    // early and the last 50 went out without the pipeline (and the explicit publish warned that nothing was left).
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l).toMatchObject({ pipeline: "orders", service: "svc" });
    const durations = lines.flatMap((l) => [l.handlerDuration ?? []].flat());
    expect(durations).toEqual(Array.from({ length: 150 }, (_, i) => i));
    expect(lines.filter((l) => l.processed !== undefined).map((l) => l.processed)).toEqual([150]);
  });

  it("keeps a user instance's namespace and default dimensions, adding pipeline per flush", () => {
    const o = captureOutput();
    const user = new Metrics({
      namespace: "Shop",
      serviceName: "orders",
      defaultDimensions: { stage: "prod" },
    });
    const m = new InvocationMetrics(user, "orders-pipeline");
    m.count("stale", 2);
    m.flush();
    m.count("failed");
    m.flush();
    const lines = o.emf();
    expect(lines).toHaveLength(2);
    for (const l of lines) {
      expect(l).toMatchObject({ stage: "prod", pipeline: "orders-pipeline", service: "orders" });
      expect((l._aws as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics[0]?.Namespace).toBe(
        "Shop",
      );
    }
    expect(lines[0]).toMatchObject({ stale: 2 });
    expect(lines[1]).toMatchObject({ failed: 1 });
    expect(lines[1]).not.toHaveProperty("stale");
  });

  it("disabled metrics: nothing reaches Powertools, and the invocation's values are dropped", () => {
    const saved = process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_METRICS_DISABLED = "true";
    try {
      const o = captureOutput();
      const disabled = new Metrics({ namespace: "Tests", serviceName: "svc" });
      const calls: string[] = [];
      for (const name of ["addDimension", "addMetric", "publishStoredMetrics"] as const) {
        disabled[name] = (() => calls.push(name)) as never;
      }
      const m = new InvocationMetrics(disabled, "orders");
      m.count("processed");
      m.handlerDuration(3);
      m.flush();
      expect(calls).toEqual([]);
      expect(m.snapshot()).toEqual({ counts: {}, receiveCounts: [], durationsMs: [] });
      expect(o.lines()).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
      else process.env.POWERTOOLS_METRICS_DISABLED = saved;
    }
  });

  it("names every counter the docs list", () => {
    expect([...COUNTERS].sort()).toEqual(
      [
        "processed",
        "duplicate",
        "stale",
        "busy",
        "inFlight",
        "superseded",
        "leaseLost",
        "tookOver",
        "failed",
        "unconfirmed",
        "conflict",
        "malformed",
        "testEvent",
        "deferred",
      ].sort(),
    );
  });
});

describe("Observer log lines", () => {
  function observe(logger?: Logger) {
    const observer = new Observer({
      pipeline: "p1",
      logger,
      metrics: new Metrics({ namespace: "Tests", serviceName: "svc" }),
    });
    const inv = observer.invocation({ requestId: "lambda-req-1" });
    return { inv, d: inv.delivery(sqsDelivery) };
  }

  const cases: [GuardOutcome<unknown>, string, string, string][] = [
    [
      { status: "processed", result: 1, fence: 3, attempt: 2, writes: [] },
      "INFO",
      "processed bucket/a.jpg",
      "processed",
    ],
    [{ status: "duplicate", result: 1 }, "INFO", "duplicate skipped for bucket/a.jpg", "duplicate"],
    [
      { status: "stale", position: "0002", current: "0005" },
      "INFO",
      "stale event skipped for bucket/a.jpg (0002 < 0005)",
      "stale",
    ],
    [
      { status: "stale", position: "0002", current: "0002" },
      "INFO",
      "stale event skipped for bucket/a.jpg (0002 = 0002, another event)",
      "stale",
    ],
    [
      { status: "busy", holder: "0001" },
      "WARN",
      "busy: bucket/a.jpg is held by an older event (0001); delivery failed for a retry",
      "busy",
    ],
    [
      { status: "in-flight" },
      "WARN",
      "in flight elsewhere: bucket/a.jpg; delivery failed for a retry",
      "inFlight",
    ],
    [
      { status: "lease-lost", reason: "superseded" },
      "WARN",
      "lease lost for bucket/a.jpg: superseded by a newer event; this run's result was not committed",
      "leaseLost",
    ],
    [
      { status: "lease-lost", reason: "expired" },
      "WARN",
      "lease lost for bucket/a.jpg: the lease expired and was taken over; this run's result was not committed",
      "leaseLost",
    ],
    [
      { status: "failed", error: new Error("boom"), released: true },
      "ERROR",
      "handler failed for bucket/a.jpg; claim released, delivery failed for a retry",
      "failed",
    ],
    [
      { status: "unconfirmed", phase: "commit", error: new Error("network down") },
      "ERROR",
      "state store did not confirm the commit for bucket/a.jpg; delivery failed for a retry",
      "unconfirmed",
    ],
  ];

  it.each(cases)("%j → %s %s", (outcome, level, message, counter) => {
    const o = captureOutput();
    const { inv, d } = observe();
    d.outcome(event, outcome, 5);
    inv.flush();
    const [line, ...rest] = o.logs();
    expect(rest).toEqual([]);
    expect(line).toMatchObject({
      level,
      message,
      correlation_id: "REQ-1",
      pipeline: "p1",
      messageId: "msg-1",
      receiveCount: 4,
      messageGroupId: "g1",
      recordIndex: 3,
      subject: "bucket/a.jpg",
      status: outcome.status,
    });
    expect(o.metrics()).toEqual({ [counter]: 1 });
  });

  it("a SILENT logger gets no call (no line is built); the counters still count", () => {
    const o = captureOutput();
    const silent = new Logger({ logLevel: "SILENT" });
    const calls: string[] = [];
    for (const level of ["debug", "info", "warn", "error"] as const) {
      silent[level] = (() => calls.push(level)) as never;
    }
    const { inv, d } = observe(silent);
    d.received();
    d.outcome(event, { status: "busy", holder: "0001" }, 5);
    d.deferred("test");
    inv.log("warn", "invocation line");
    inv.flush();
    expect(calls).toEqual([]);
    expect(o.metrics()).toEqual({ busy: 1, deferred: 1, receiveCount: 4 });
  });

  it("logs superseded, takeover and refused renewals from the guard's trace", () => {
    const o = captureOutput();
    const { inv, d } = observe();
    const trace = d.trace(event);
    trace({ type: "claimed", key: "o#bucket/a.jpg", fence: 2, attempt: 1, superseded: "0001" });
    trace({ type: "claimed", key: "o#bucket/a.jpg", fence: 3, attempt: 2, tookOver: true });
    trace({ type: "heartbeat", key: "o#bucket/a.jpg", fence: 3, ok: true });
    trace({ type: "heartbeat", key: "o#bucket/a.jpg", fence: 3, ok: false });
    inv.flush();
    expect(o.logs().map((l) => [l.level, l.message, l.correlation_id])).toEqual([
      ["INFO", "superseded older event of bucket/a.jpg (0001 -> 0002)", "REQ-1"],
      ["WARN", "took over bucket/a.jpg from a run whose lease expired (attempt 2)", "REQ-1"],
      ["WARN", "lease renewal refused for bucket/a.jpg: aborting the handler", "REQ-1"],
    ]);
    expect(o.metrics()).toEqual({ superseded: 1, tookOver: 1 });
  });

  it("logs a malformed SQS message with the receive count and the redrive hint, without a stack", () => {
    const o = captureOutput();
    const { inv, d } = observe();
    d.received();
    d.malformed(new MalformedEventError("body is not valid JSON", "Records[3].body"), "dead-letter");
    inv.flush();
    const [line] = o.logs();
    expect(line).toMatchObject({
      level: "ERROR",
      message: "malformed message msg-1: body is not valid JSON (at Records[3].body)",
      receiveCount: 4,
      error: { name: "MalformedEventError", path: "Records[3].body" },
    });
    expect(String(line?.hint)).toMatch(/receive 4\).*dead-letters it after maxReceiveCount/);
    expect(line?.error).not.toHaveProperty("stack");
    expect(o.metrics()).toEqual({ malformed: 1, receiveCount: 4 });
  });

  it("uses the user's Logger, and gives handlers a child with the correlation id", () => {
    const o = captureOutput();
    const logger = new Logger({ serviceName: "shop", persistentKeys: { team: "images" } });
    const { inv, d } = observe(logger);
    d.testEvent("uploads");
    d.childLogger().info("from the handler");
    inv.log("info", "invocation line");
    inv.unknownInvocation(new MalformedEventError("unknown invocation shape", ""));
    const lines = o.logs();
    expect(lines.map((l) => [l.message, l.correlation_id, l.team, l.service, l.pipeline])).toEqual([
      ["s3:TestEvent acknowledged for bucket uploads", "REQ-1", "images", "shop", "p1"],
      ["from the handler", "REQ-1", "images", "shop", "p1"],
      ["invocation line", "lambda-req-1", "images", "shop", "p1"],
      ["unknown invocation rejected: unknown invocation shape", "lambda-req-1", "images", "shop", "p1"],
    ]);
    // The parent logger did not pick up the child's correlation id.
    logger.info("parent");
    expect(o.logs().at(-1)).not.toHaveProperty("correlation_id");
  });
});

describe("Observer pipeline name", () => {
  const saved = process.env.EONCE_PIPELINE;
  afterEach(() => {
    if (saved === undefined) delete process.env.EONCE_PIPELINE;
    else process.env.EONCE_PIPELINE = saved;
  });

  it("is the option, else EONCE_PIPELINE (set by the CDK construct), else the function name", () => {
    process.env.EONCE_PIPELINE = "images";
    expect(new Observer({ pipeline: "explicit" }).invocation({ functionName: "fn" }).pipeline).toBe(
      "explicit",
    );
    expect(new Observer().invocation({ functionName: "fn" }).pipeline).toBe("images");
    delete process.env.EONCE_PIPELINE;
    expect(new Observer().invocation({ functionName: "fn" }).pipeline).toBe("fn");
  });
});
