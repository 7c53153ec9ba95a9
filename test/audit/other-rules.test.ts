import { describe, expect, it } from "vitest";
import { audit, fn, guardTable, mapping, pairs, queue, type Resources, streamPipeline } from "./helpers.js";

describe("batch-item-failures", () => {
  const streams = (types: unknown): Resources => streamPipeline({ FunctionResponseTypes: types });

  it("passes with ReportBatchItemFailures, fails each batch mapping without it", () => {
    expect(pairs(audit(streams(["ReportBatchItemFailures"])))).toEqual([]);
    expect(pairs(audit(streams(undefined)))).toEqual([
      "batch-item-failures Ddb",
      "batch-item-failures Kinesis",
    ]);
    expect(pairs(audit(streams([])))).toEqual(["batch-item-failures Ddb", "batch-item-failures Kinesis"]);
  });

  it("applies to an SQS mapping, recognised by a literal ARN when the queue is elsewhere", () => {
    const r: Resources = {
      Fn: fn(),
      M: mapping("arn:aws:sqs:eu-west-1:123456789012:q", { Ref: "Fn" }, { FunctionResponseTypes: [] }),
    };
    expect(pairs(audit(r))).toContain("batch-item-failures M");
  });

  it("ignores sources without item failures (Kafka)", () => {
    const r: Resources = {
      Fn: fn(),
      M: mapping(
        "arn:aws:kafka:eu-west-1:123456789012:cluster/c/1",
        { Ref: "Fn" },
        { FunctionResponseTypes: [] },
      ),
    };
    expect(pairs(audit(r))).toEqual([]);
  });
});

/** S3 → Lambda through the bucket's own notification configuration. */
function s3ToLambda(extra: Resources = {}): Resources {
  return {
    Bucket: {
      Type: "AWS::S3::Bucket",
      Properties: {
        NotificationConfiguration: {
          LambdaConfigurations: [{ Event: "s3:ObjectCreated:*", Function: { "Fn::GetAtt": ["Fn", "Arn"] } }],
        },
      },
    },
    Fn: fn({ DeadLetterConfig: { TargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] } } }),
    Dlq: queue(),
    ...extra,
  };
}

describe("s3-no-guard-table", () => {
  it("fails without a guard table, passes with one", () => {
    expect(pairs(audit(s3ToLambda()))).toEqual(["s3-no-guard-table Bucket"]);
    expect(pairs(audit(s3ToLambda({ State: guardTable() })))).toEqual([]);
  });

  it.each([
    ["a pk number key", { AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "N" }] }],
    ["another key name", { KeySchema: [{ AttributeName: "id", KeyType: "HASH" }] }],
    [
      "a sort key",
      {
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
      },
    ],
    ["the pk shape tagged as another role", { Tags: [{ Key: "eonce:role", Value: "records" }] }],
  ])("a table with %s is not a guard table", (_name, props) => {
    expect(pairs(audit(s3ToLambda({ T: guardTable(props) })))).toEqual(["s3-no-guard-table Bucket"]);
  });

  it("a table of another shape tagged eonce:role=state-table is one", () => {
    const T = guardTable({
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      Tags: [{ Key: "eonce:role", Value: "state-table" }],
    });
    expect(pairs(audit(s3ToLambda({ T })))).toEqual([]);
  });

  it("a function tagged eonce:state inline or external is a guard whose state has no table here", () => {
    const tagged = (value: string, tags: "list" | "map" = "list") => {
      const r = s3ToLambda();
      const Tags = tags === "list" ? [{ Key: "eonce:state", Value: value }] : { "eonce:state": value };
      r.Fn = fn({ DeadLetterConfig: { TargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] } }, Tags });
      return r;
    };
    expect(pairs(audit(tagged("inline")))).toEqual([]);
    expect(pairs(audit(tagged("external", "map")))).toEqual([]);
    // `table` says the state is in a table: the template must then show it.
    expect(pairs(audit(tagged("table")))).toEqual(["s3-no-guard-table Bucket"]);
    expect(pairs(audit(tagged("elsewhere")))).toEqual(["s3-no-guard-table Bucket"]);
    // Only a function's tag counts.
    const onQueue = s3ToLambda({ Dlq: queue({ Tags: [{ Key: "eonce:state", Value: "inline" }] }) });
    expect(pairs(audit(onQueue))).toEqual(["s3-no-guard-table Bucket"]);
  });

  it("sees CDK's Custom::S3BucketNotifications and an EventBridge rule on aws.s3", () => {
    const r: Resources = {
      Notifications: {
        Type: "Custom::S3BucketNotifications",
        Properties: {
          NotificationConfiguration: { QueueConfigurations: [{ QueueArn: "arn:aws:sqs:x:1:q" }] },
        },
      },
      Rule: {
        Type: "AWS::Events::Rule",
        Properties: {
          EventPattern: { source: ["aws.s3"] },
          Targets: [{ Id: "t", Arn: "arn:aws:sqs:x:1:q", DeadLetterConfig: { Arn: "arn:aws:sqs:x:1:d" } }],
        },
      },
      OtherRule: {
        Type: "AWS::Events::Rule",
        Properties: {
          EventPattern: { source: ["aws.ec2"] },
          Targets: [{ Id: "t", Arn: "arn:aws:sqs:x:1:q", DeadLetterConfig: { Arn: "arn:aws:sqs:x:1:d" } }],
        },
      },
    };
    expect(pairs(audit(r))).toEqual(["s3-no-guard-table Notifications", "s3-no-guard-table Rule"]);
  });
});

describe("async-no-on-failure", () => {
  const withoutDlq = (extra: Resources = {}) => {
    const r = s3ToLambda({ State: guardTable(), ...extra });
    r.Fn = fn();
    return r;
  };

  it("fails without an on-failure destination or DLQ; passes with either", () => {
    expect(pairs(audit(withoutDlq()))).toEqual(["async-no-on-failure Fn"]);
    expect(pairs(audit(s3ToLambda({ State: guardTable() })))).toEqual([]);
    const config = {
      Type: "AWS::Lambda::EventInvokeConfig",
      Properties: {
        FunctionName: { Ref: "Fn" },
        Qualifier: "$LATEST",
        DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": ["Dlq", "Arn"] } } },
      },
    };
    expect(pairs(audit(withoutDlq({ Config: config })))).toEqual([]);
  });

  it("an EventInvokeConfig with only an on-success destination does not count", () => {
    const config = {
      Type: "AWS::Lambda::EventInvokeConfig",
      Properties: {
        FunctionName: { Ref: "Fn" },
        Qualifier: "$LATEST",
        DestinationConfig: { OnSuccess: { Destination: { "Fn::GetAtt": ["Dlq", "Arn"] } } },
      },
    };
    expect(pairs(audit(withoutDlq({ Config: config })))).toEqual(["async-no-on-failure Fn"]);
  });

  it("covers SNS subscriptions and EventBridge targets; not SQS mappings (synchronous)", () => {
    const r: Resources = {
      Fn: fn(),
      Topic: { Type: "AWS::SNS::Topic" },
      Sub: {
        Type: "AWS::SNS::Subscription",
        Properties: {
          Protocol: "lambda",
          TopicArn: { Ref: "Topic" },
          Endpoint: { "Fn::GetAtt": ["Fn", "Arn"] },
        },
      },
    };
    expect(pairs(audit(r))).toEqual(["async-no-on-failure Fn"]);
    const rule = {
      Type: "AWS::Events::Rule",
      Properties: {
        Targets: [{ Id: "t", Arn: { "Fn::GetAtt": ["Fn2", "Arn"] }, DeadLetterConfig: { Arn: "d" } }],
      },
    };
    expect(pairs(audit({ Fn2: fn(), Rule: rule }))).toEqual(["async-no-on-failure Fn2"]);
  });
});

describe("state-table-no-ttl", () => {
  it.each([
    [{ AttributeName: "expiresAt", Enabled: true }, []],
    [{ AttributeName: "expiresAt", Enabled: "true" }, []],
    [{ AttributeName: "expiresAt", Enabled: false }, ["state-table-no-ttl T"]],
    [{ AttributeName: "ttl", Enabled: true }, ["state-table-no-ttl T"]],
    [undefined, ["state-table-no-ttl T"]],
  ])("TimeToLiveSpecification %j → %j", (ttl, expected) => {
    const findings = audit({ T: guardTable({ TimeToLiveSpecification: ttl }) });
    expect(pairs(findings)).toEqual(expected);
    for (const f of findings) expect(f.severity).toBe("warning");
  });
});

describe("eventbridge-target-no-dlq", () => {
  it("reports each target without a DeadLetterConfig, by rule", () => {
    const rule = {
      Type: "AWS::Events::Rule",
      Properties: {
        EventPattern: { source: ["my.app"] },
        Targets: [
          { Id: "ok", Arn: "arn:aws:sqs:x:1:a", DeadLetterConfig: { Arn: "arn:aws:sqs:x:1:d" } },
          { Id: "bad", Arn: "arn:aws:sqs:x:1:b" },
        ],
      },
    };
    const findings = audit({ Rule: rule });
    expect(pairs(findings)).toEqual(["eventbridge-target-no-dlq Rule"]);
    expect(findings[0]!.message).toContain("bad");
  });
});

describe("unresolved-reference", () => {
  it("warns when a mapping's function is a parameter", () => {
    const r: Resources = {
      Dlq: queue(),
      Queue: queue({ RedrivePolicy: { deadLetterTargetArn: "arn:aws:sqs:x:1:d", maxReceiveCount: 5 } }),
      M: mapping({ "Fn::GetAtt": ["Queue", "Arn"] }, { Ref: "FnName" }),
    };
    const findings = audit(r, ["FnName"]);
    expect(pairs(findings)).toEqual(["unresolved-reference M"]);
    expect(findings[0]!.message).toMatch(/!Ref FnName cannot be resolved/);
  });
});
