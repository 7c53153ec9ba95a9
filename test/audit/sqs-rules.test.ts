import { describe, expect, it } from "vitest";
import { audit, mapping, pairs, queue, redrive, sqsPipeline } from "./helpers.js";

describe("sqs-visibility-6x and sqs-visibility-1.3x", () => {
  it.each([
    // [visibility, timeout, expected]
    [180, 30, []],
    [181, 30, []],
    [179, 30, ["sqs-visibility-6x Queue"]],
    [39, 30, ["sqs-visibility-6x Queue"]], // exactly 1.3 ×: only the AWS rule
    [38, 30, ["sqs-visibility-1.3x Queue"]],
    [38.9, 30, ["sqs-visibility-1.3x Queue"]],
    ["180", "30", []], // CloudFormation accepts numbers as strings
    ["179", "30", ["sqs-visibility-6x Queue"]],
  ])("visibility %s s, timeout %s s → %j", (visibility, timeout, expected) => {
    expect(pairs(audit(sqsPipeline(visibility, timeout)))).toEqual(expected);
  });

  it("uses the defaults: 30 s visibility, 3 s function timeout (30 ≥ 6 × 3 passes; 6 × 5 = 30 passes; 6 × 6 fails)", () => {
    expect(pairs(audit(sqsPipeline(undefined, undefined)))).toEqual([]);
    expect(pairs(audit(sqsPipeline(undefined, 5)))).toEqual([]);
    expect(pairs(audit(sqsPipeline(undefined, 6)))).toEqual(["sqs-visibility-6x Queue"]);
    expect(pairs(audit(sqsPipeline(undefined, 30)))).toEqual(["sqs-visibility-1.3x Queue"]);
  });

  it("says why and how to fix, with this template's numbers", () => {
    const [f] = audit(sqsPipeline(60, 30));
    expect(f).toMatchObject({ rule: "sqs-visibility-6x", severity: "error", resource: "Queue" });
    expect(f!.message).toContain("60 s");
    expect(f!.message).toContain("180 s");
    expect(f!.why).toMatch(/6 ×/);
    expect(f!.fix).toMatch(/VisibilityTimeout/);
  });

  it("a timeout from a parameter is reported as unresolved, not guessed", () => {
    const r = sqsPipeline(60, { Ref: "TimeoutParam" });
    expect(pairs(audit(r, ["TimeoutParam"]))).toEqual(["unresolved-reference Source"]);
  });

  it("follows an alias to its function, and a literal ARN to the queue of that name", () => {
    const r = sqsPipeline(60, 30);
    r.Queue!.Properties!.QueueName = "orders";
    r.Alias = { Type: "AWS::Lambda::Alias", Properties: { FunctionName: { Ref: "Fn" }, Name: "live" } };
    r.Source = mapping("arn:aws:sqs:us-east-1:123456789012:orders", { Ref: "Alias" });
    expect(pairs(audit(r))).toEqual(["sqs-visibility-6x Queue"]);
  });

  it("a queue ARN naming no queue of the template is outside it: a warning", () => {
    const r = sqsPipeline(60, 30);
    r.Source = mapping("arn:aws:sqs:us-east-1:123456789012:elsewhere");
    const findings = audit(r);
    expect(pairs(findings)).toEqual(["unresolved-reference Source"]);
    expect(findings[0]!.message).toMatch(/names no resource in this template/);
  });
});

describe("sqs-no-dlq and sqs-max-receive-count", () => {
  it.each([
    [5, []],
    [6, []],
    [4, ["sqs-max-receive-count Queue"]],
    [1, ["sqs-max-receive-count Queue"]],
    ["4", ["sqs-max-receive-count Queue"]],
  ])("maxReceiveCount %s → %j", (count, expected) => {
    const r = sqsPipeline(180, 30);
    r.Queue!.Properties!.RedrivePolicy = redrive(count);
    expect(pairs(audit(r))).toEqual(expected);
  });

  it("a source queue without RedrivePolicy has no DLQ; the DLQ itself is never reported", () => {
    const r = sqsPipeline(180, 30);
    delete r.Queue!.Properties!.RedrivePolicy;
    expect(pairs(audit(r))).toEqual(["sqs-no-dlq Queue"]);
  });

  it("a queue nothing reads from is not a source queue", () => {
    expect(pairs(audit({ Lonely: queue() }))).toEqual([]);
  });

  it("reads a RedrivePolicy written as a JSON string", () => {
    const r = sqsPipeline(180, 30);
    r.Queue!.Properties!.RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: "arn:aws:sqs:x:1:d",
      maxReceiveCount: 3,
    });
    expect(pairs(audit(r))).toEqual(["sqs-max-receive-count Queue"]);
  });
});

describe("fifo-content-dedup", () => {
  it("warns on a FIFO source queue without ContentBasedDeduplication, not with it, not on its FIFO DLQ", () => {
    const r = sqsPipeline(180, 30);
    r.Dlq = queue({ FifoQueue: true });
    r.Queue!.Properties!.FifoQueue = "true";
    const findings = audit(r);
    expect(pairs(findings)).toEqual(["fifo-content-dedup Queue"]);
    expect(findings[0]!.severity).toBe("warning");
    r.Queue!.Properties!.ContentBasedDeduplication = true;
    expect(pairs(audit(r))).toEqual([]);
  });

  it("a .fifo queue name is a FIFO queue too", () => {
    const r = sqsPipeline(180, 30);
    r.Queue!.Properties!.QueueName = "orders.fifo";
    expect(pairs(audit(r))).toEqual(["fifo-content-dedup Queue"]);
  });
});
