import { describe, expect, it } from "vitest";
import { auditTemplate } from "../../src/audit/index.js";
import { audit, fn, mapping, pairs, queue, type Resources, SAFE_STREAM, streamPipeline } from "./helpers.js";

/** Both mappings (Kinesis and DynamoDB streams) found by `rule`. */
const both = (rule: string) => [`${rule} Ddb`, `${rule} Kinesis`];

describe("stream rules: a safe Kinesis and DynamoDB streams pipeline passes", () => {
  it("has no finding", () => {
    expect(pairs(audit(streamPipeline()))).toEqual([]);
  });
});

describe("stream-bisect", () => {
  it.each([
    [false, both("stream-bisect")],
    ["false", both("stream-bisect")],
    [undefined, both("stream-bisect")],
    [true, []],
    ["TRUE", []],
  ])("BisectBatchOnFunctionError %j → %j", (value, expected) => {
    expect(pairs(audit(streamPipeline({ BisectBatchOnFunctionError: value })))).toEqual(expected);
  });

  it("an error that says why and how", () => {
    const [f] = audit(streamPipeline({ BisectBatchOnFunctionError: false }));
    expect(f).toMatchObject({ rule: "stream-bisect", severity: "error" });
    expect(f!.message).toMatch(/mapping Ddb of a DynamoDB stream/);
    expect(f!.fix).toMatch(/BisectBatchOnFunctionError: true/);
  });

  it("a value from a parameter is unresolved, not guessed", () => {
    const r = streamPipeline({ BisectBatchOnFunctionError: { Ref: "Bisect" } });
    expect(pairs(audit(r, ["Bisect"]))).toEqual(both("unresolved-reference"));
  });
});

describe("stream-unbounded-retries", () => {
  it.each([
    [-1, both("stream-unbounded-retries")],
    ["-1", both("stream-unbounded-retries")],
    [undefined, both("stream-unbounded-retries")], // Lambda's default for streams is -1
    [0, []],
    [10, []],
    [10_000, []],
  ])("MaximumRetryAttempts %j → %j", (value, expected) => {
    expect(pairs(audit(streamPipeline({ MaximumRetryAttempts: value })))).toEqual(expected);
  });

  it("says whether the value is missing or -1", () => {
    expect(audit(streamPipeline({ MaximumRetryAttempts: undefined }))[0]!.message).toMatch(/default -1/);
    expect(audit(streamPipeline({ MaximumRetryAttempts: -1 }))[0]!.message).toMatch(
      /has MaximumRetryAttempts -1/,
    );
  });

  it("a value from a parameter is unresolved", () => {
    const r = streamPipeline({ MaximumRetryAttempts: { Ref: "Retries" } });
    expect(pairs(audit(r, ["Retries"]))).toEqual(both("unresolved-reference"));
  });
});

describe("stream-unbounded-record-age", () => {
  it.each([
    [-1, both("stream-unbounded-record-age")],
    [undefined, both("stream-unbounded-record-age")],
    [60, []],
    ["86400", []],
  ])("MaximumRecordAgeInSeconds %j → %j", (value, expected) => {
    expect(pairs(audit(streamPipeline({ MaximumRecordAgeInSeconds: value })))).toEqual(expected);
  });
});

describe("stream-no-on-failure", () => {
  it.each([
    [undefined, both("stream-no-on-failure")],
    [{}, both("stream-no-on-failure")],
    [{ OnFailure: {} }, both("stream-no-on-failure")],
    [{ OnSuccess: { Destination: "arn:aws:sqs:eu-west-1:1:q" } }, both("stream-no-on-failure")],
    [{ OnFailure: { Destination: "arn:aws:sns:eu-west-1:123456789012:failed" } }, []],
  ])("DestinationConfig %j → %j", (value, expected) => {
    expect(pairs(audit(streamPipeline({ DestinationConfig: value })))).toEqual(expected);
  });

  it("the on-failure queue is a dead-letter queue, not a source queue (no sqs-no-dlq on it)", () => {
    expect(pairs(audit(streamPipeline()))).not.toContain("sqs-no-dlq Dlq");
  });
});

describe("stream-starting-latest", () => {
  it.each([
    ["LATEST", both("stream-starting-latest")],
    ["latest", both("stream-starting-latest")],
    ["TRIM_HORIZON", []],
    ["AT_TIMESTAMP", []],
  ])("StartingPosition %s → %j", (value, expected) => {
    expect(pairs(audit(streamPipeline({ StartingPosition: value })))).toEqual(expected);
  });

  it("is a warning", () => {
    expect(audit(streamPipeline({ StartingPosition: "LATEST" }))[0]!.severity).toBe("warning");
  });
});

describe("stream-tumbling-window", () => {
  it.each([
    [60, both("stream-tumbling-window")],
    ["900", both("stream-tumbling-window")],
    [0, []],
    [undefined, []],
  ])("TumblingWindowInSeconds %j → %j", (value, expected) => {
    expect(pairs(audit(streamPipeline({ TumblingWindowInSeconds: value })))).toEqual(expected);
  });

  it("a window from a parameter may be on: reported", () => {
    const r = streamPipeline({ TumblingWindowInSeconds: { Ref: "Window" } });
    const findings = audit(r, ["Window"]);
    expect(pairs(findings)).toEqual(both("stream-tumbling-window"));
    expect(findings[0]!.message).toContain("!Ref Window");
  });
});

describe("which mappings are stream mappings", () => {
  const unsafe = { FunctionResponseTypes: ["ReportBatchItemFailures"], StartingPosition: "LATEST" };

  it("a literal Kinesis stream ARN and a literal DynamoDB stream ARN, in the template or outside it", () => {
    const r: Resources = {
      Fn: fn(),
      Table: { Type: "AWS::DynamoDB::Table", Properties: { TableName: "profiles" } },
      Inside: mapping(
        "arn:aws:dynamodb:eu-west-1:1:table/profiles/stream/2026-01-01T00:00:00.000",
        undefined,
        {
          ...SAFE_STREAM,
          ...unsafe,
        },
      ),
      Outside: mapping("arn:aws:kinesis:eu-west-1:1:stream/elsewhere", undefined, {
        ...SAFE_STREAM,
        ...unsafe,
      }),
      Dlq: queue(),
    };
    expect(pairs(audit(r))).toEqual(["stream-starting-latest Inside", "stream-starting-latest Outside"]);
  });

  it("not an SQS mapping, nor a table's own ARN (no stream)", () => {
    const r: Resources = {
      Fn: fn(),
      Dlq: queue(),
      Queue: queue({
        RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] }, maxReceiveCount: 5 },
      }),
      Sqs: mapping({ "Fn::GetAtt": ["Queue", "Arn"] }),
      Table: { Type: "AWS::DynamoDB::Table", Properties: {} },
      TableArn: mapping({ "Fn::GetAtt": ["Table", "Arn"] }),
    };
    expect(pairs(audit(r))).toEqual([]);
  });

  it("SAM's Kinesis and DynamoDB events are lowered to mappings the rules read", () => {
    const text = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Clicks: { Type: AWS::Kinesis::Stream, Properties: { ShardCount: 1 } }
  Profiles:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{ AttributeName: id, KeyType: HASH }]
      StreamSpecification: { StreamViewType: NEW_IMAGE }
  Failed: { Type: AWS::SQS::Queue }
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Handler: index.handler
      Events:
        Clicks:
          Type: Kinesis
          Properties:
            Stream: !GetAtt Clicks.Arn
            StartingPosition: LATEST
            FunctionResponseTypes: [ReportBatchItemFailures]
        Profiles:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Profiles.StreamArn
            StartingPosition: TRIM_HORIZON
            FunctionResponseTypes: [ReportBatchItemFailures]
            BisectBatchOnFunctionError: true
            MaximumRetryAttempts: 10
            MaximumRecordAgeInSeconds: 3600
            DestinationConfig: { OnFailure: { Type: SQS, Destination: !GetAtt Failed.Arn } }
`;
    expect(
      auditTemplate(text)
        .map((f) => `${f.rule} ${f.resource}`)
        .sort(),
    ).toEqual([
      "stream-bisect FnClicks",
      "stream-no-on-failure FnClicks",
      "stream-starting-latest FnClicks",
      "stream-unbounded-record-age FnClicks",
      "stream-unbounded-retries FnClicks",
    ]);
  });
});
