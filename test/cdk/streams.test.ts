import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as kinesis from "aws-cdk-lib/aws-kinesis";
import * as kms from "aws-cdk-lib/aws-kms";
import { describe, expect, it } from "vitest";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";
import { OptionsError } from "../../src/core/errors.js";
import { arnOf, INLINE, logicalId, statementsOfRole, synth } from "./helpers.js";

// One synthesized stack per stream delivery with the defaults, shared by the assertions below.
const kin = synth({ pipelineName: "clicks", delivery: "kinesis" });
const ddb = synth({ pipelineName: "profiles", delivery: "dynamodb-streams" });

/** The one event source mapping of a template. */
function mappingOf(template: Template): Record<string, unknown> {
  const mappings = Object.values(template.findResources("AWS::Lambda::EventSourceMapping"));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties as Record<string, unknown>;
}

/** A stack of its own with a pipeline given resources made in that stack. */
function withResources(
  make: (stack: Stack) => Partial<EffectivelyOncePipelineProps>,
  props: Omit<EffectivelyOncePipelineProps, "code" | "handler">,
) {
  const stack = new Stack(new App(), "Given");
  const pipeline = new EffectivelyOncePipeline(stack, "Pipeline", { ...INLINE, ...props, ...make(stack) });
  return { stack, pipeline, template: Template.fromStack(stack) };
}

describe("stream deliveries: the event source mapping", () => {
  it.each([
    ["kinesis", kin, 86_400],
    ["dynamodb-streams", ddb, 43_200],
  ] as const)(
    "%s: TRIM_HORIZON, bisect, item failures, bounded retries and age, the DLQ on failure",
    (_, s, age) => {
      expect(mappingOf(s.template)).toMatchObject({
        StartingPosition: "TRIM_HORIZON",
        BisectBatchOnFunctionError: true,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        MaximumRetryAttempts: 10,
        MaximumRecordAgeInSeconds: age,
        ParallelizationFactor: 1,
        BatchSize: 100,
        DestinationConfig: {
          OnFailure: { Destination: arnOf(logicalId(s.stack, s.pipeline.deadLetterQueue)) },
        },
      });
      const m = mappingOf(s.template);
      expect(m.TumblingWindowInSeconds).toBeUndefined();
      expect(m.MaximumBatchingWindowInSeconds).toBeUndefined();
      // No source queue: the stream's records are not SQS messages.
      s.template.resourceCountIs("AWS::SQS::Queue", 1);
      expect(s.pipeline.queue).toBeUndefined();
      expect(s.pipeline.inputBucket).toBeUndefined();
    },
  );

  it("kinesis: reads the stream the construct creates: on demand, encrypted with aws/kinesis, kept 7 days", () => {
    const stream = logicalId(kin.stack, kin.pipeline.stream as kinesis.Stream);
    expect(mappingOf(kin.template).EventSourceArn).toEqual(arnOf(stream));
    kin.template.resourceCountIs("AWS::Kinesis::Stream", 1);
    kin.template.hasResourceProperties("AWS::Kinesis::Stream", {
      StreamEncryption: { EncryptionType: "KMS", KeyId: "alias/aws/kinesis" },
      StreamModeDetails: { StreamMode: "ON_DEMAND" },
      RetentionPeriodHours: 168,
    });
    expect(kin.template.toJSON().Resources[stream].DeletionPolicy).toBe("Retain");
  });

  it("dynamodb-streams: reads the stream of the table it creates (NEW_AND_OLD_IMAGES, tagged as a source)", () => {
    const table = logicalId(ddb.stack, ddb.pipeline.sourceTable as dynamodb.Table);
    expect(mappingOf(ddb.template).EventSourceArn).toEqual({ "Fn::GetAtt": [table, "StreamArn"] });
    const t = ddb.template.toJSON().Resources[table];
    expect(t.Properties).toMatchObject({
      StreamSpecification: { StreamViewType: "NEW_AND_OLD_IMAGES" },
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      Tags: [{ Key: "eonce:role", Value: "source" }],
    });
    expect(t.Properties.TimeToLiveSpecification).toBeUndefined();
    // The guard's state table besides it.
    ddb.template.resourceCountIs("AWS::DynamoDB::Table", 2);
  });

  it("the options reach the mapping and the created table", () => {
    const k = synth({
      pipelineName: "k",
      delivery: "kinesis",
      batchSize: 500,
      maxBatchingWindowSeconds: 5,
      parallelizationFactor: 4,
      retryAttempts: 3,
      maxRecordAgeSeconds: 3600,
    });
    expect(mappingOf(k.template)).toMatchObject({
      BatchSize: 500,
      MaximumBatchingWindowInSeconds: 5,
      ParallelizationFactor: 4,
      MaximumRetryAttempts: 3,
      MaximumRecordAgeInSeconds: 3600,
    });
    const provisioned = synth({ pipelineName: "p", delivery: "kinesis", shardCount: 2 });
    provisioned.template.hasResourceProperties("AWS::Kinesis::Stream", {
      ShardCount: 2,
      StreamModeDetails: { StreamMode: "PROVISIONED" },
      RetentionPeriodHours: 168,
    });
    const d = synth({ pipelineName: "d", delivery: "dynamodb-streams", streamViewType: "KEYS_ONLY" });
    d.template.hasResourceProperties("AWS::DynamoDB::Table", {
      StreamSpecification: { StreamViewType: "KEYS_ONLY" },
    });
  });

  it("reads a stream or a table given by the user, and creates none", () => {
    const k = withResources(
      (stack) => ({
        kinesisStream: kinesis.Stream.fromStreamArn(
          stack,
          "S",
          "arn:aws:kinesis:eu-west-1:111111111111:stream/s",
        ),
      }),
      { pipelineName: "k", delivery: "kinesis" },
    );
    k.template.resourceCountIs("AWS::Kinesis::Stream", 0);
    expect(mappingOf(k.template).EventSourceArn).toBe("arn:aws:kinesis:eu-west-1:111111111111:stream/s");
    const streamArn = "arn:aws:dynamodb:eu-west-1:111111111111:table/t/stream/2026-01-01T00:00:00.000";
    const d = withResources(
      (stack) => ({
        sourceTable: dynamodb.Table.fromTableAttributes(stack, "T", {
          tableName: "t",
          tableStreamArn: streamArn,
        }),
      }),
      { pipelineName: "d", delivery: "dynamodb-streams" },
    );
    expect(mappingOf(d.template).EventSourceArn).toBe(streamArn);
    d.template.resourceCountIs("AWS::DynamoDB::Table", 1); // the state table only
  });
});

describe("stream deliveries: least privilege", () => {
  const roleStatements = (s: typeof kin) => statementsOfRole(s.template, logicalId(s.stack, s.pipeline.role));

  it("kinesis: the stream's reads on the stream only, SendMessage alone on the DLQ", () => {
    const stream = arnOf(logicalId(kin.stack, kin.pipeline.stream as kinesis.Stream));
    const statements = roleStatements(kin);
    const onStream = statements.filter((s) => JSON.stringify(s.resource) === JSON.stringify(stream));
    expect(onStream.flatMap((s) => s.actions).every((a) => a.startsWith("kinesis:"))).toBe(true);
    expect(onStream.flatMap((s) => s.actions)).toEqual(
      expect.arrayContaining(["kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:ListShards"]),
    );
    const dlq = arnOf(logicalId(kin.stack, kin.pipeline.deadLetterQueue));
    expect(statements.filter((s) => JSON.stringify(s.resource) === JSON.stringify(dlq))).toEqual([
      { actions: ["sqs:SendMessage"], resource: dlq },
    ]);
    // Nothing on a wildcard resource, no wildcard action.
    for (const s of statements) {
      expect(JSON.stringify(s.resource)).not.toBe('"*"');
      for (const a of s.actions) expect(a).not.toContain("*");
    }
  });

  it("dynamodb-streams: the stream's reads on its stream ARN; ListStreams (no resource-level permission) on *", () => {
    const table = logicalId(ddb.stack, ddb.pipeline.sourceTable as dynamodb.Table);
    const statements = roleStatements(ddb);
    expect(statements).toContainEqual({
      actions: ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
      resource: { "Fn::GetAtt": [table, "StreamArn"] },
    });
    const wildcard = statements.filter((s) => s.resource === "*");
    expect(wildcard).toEqual([{ actions: ["dynamodb:ListStreams"], resource: "*" }]);
    // The function writes nothing to the source table.
    expect(statements.some((s) => JSON.stringify(s.resource).includes(`"${table}","Arn"`))).toBe(false);
  });

  it("a given stream with a customer key: Decrypt on that key", () => {
    const k = withResources(
      (stack) => ({
        kinesisStream: new kinesis.Stream(stack, "S", {
          encryption: kinesis.StreamEncryption.KMS,
          encryptionKey: new kms.Key(stack, "K"),
        }),
      }),
      { pipelineName: "k", delivery: "kinesis" },
    );
    const actions = statementsOfRole(k.template, logicalId(k.stack, k.pipeline.role)).flatMap(
      (s) => s.actions,
    );
    expect(actions).toContain("kms:Decrypt");
  });
});

describe("stream deliveries: alarms and dashboard", () => {
  it("alarm on the iterator age (maximum, per minute) above the threshold, beside the DLQ alarm", () => {
    for (const s of [kin, ddb]) {
      s.template.resourceCountIs("AWS::CloudWatch::Alarm", 5);
      s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/Lambda",
        MetricName: "IteratorAge",
        Statistic: "Maximum",
        Period: 60,
        Threshold: 900_000,
        Dimensions: [{ Name: "FunctionName", Value: { Ref: logicalId(s.stack, s.pipeline.function) } }],
      });
      // The mapping's on-failure messages land in the DLQ, which the DLQ alarm watches.
      s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/SQS",
        MetricName: "ApproximateNumberOfMessagesVisible",
        Dimensions: [
          {
            Name: "QueueName",
            Value: { "Fn::GetAtt": [logicalId(s.stack, s.pipeline.deadLetterQueue), "QueueName"] },
          },
        ],
      });
      expect(s.pipeline.alarms.iteratorAge).toBeDefined();
      const body = JSON.stringify(s.template.findResources("AWS::CloudWatch::Dashboard"));
      expect(body).toContain('\\"AWS/Lambda\\",\\"IteratorAge\\"');
    }
    const custom = synth({ pipelineName: "c", delivery: "kinesis", iteratorAgeAlarmSeconds: 60 });
    custom.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "IteratorAge",
      Threshold: 60_000,
    });
  });

  it("no iterator age alarm nor widget for the other deliveries", () => {
    const q = synth({ pipelineName: "q", delivery: "sqs" });
    expect(q.pipeline.alarms.iteratorAge).toBeUndefined();
    expect(JSON.stringify(q.template.toJSON())).not.toContain("IteratorAge");
  });
});

describe("stream deliveries: options validated at construction", () => {
  const construct = (props: Record<string, unknown>) =>
    new EffectivelyOncePipeline(new Stack(new App(), "T"), "P", {
      ...INLINE,
      ...props,
    } as unknown as EffectivelyOncePipelineProps);
  const k = { pipelineName: "p", delivery: "kinesis" };
  const d = { pipelineName: "p", delivery: "dynamodb-streams" };

  it.each([
    [{ ...k, tumblingWindowSeconds: 60 }, /unknown option "tumblingWindowSeconds"/],
    [{ ...k, startingPosition: "LATEST" }, /unknown option "startingPosition"/],
    [{ ...k, retryAttempts: -1 }, /retryAttempts must be an integer from 0 to 10000, got -1/],
    [{ ...k, retryAttempts: 10_001 }, /retryAttempts must be an integer from 0 to 10000/],
    [{ ...k, maxRecordAgeSeconds: -1 }, /maxRecordAgeSeconds must be an integer from 60 to 604800/],
    [{ ...k, maxRecordAgeSeconds: 604_801 }, /maxRecordAgeSeconds must be an integer from 60 to 604800/],
    [{ ...d, maxRecordAgeSeconds: 86_401 }, /maxRecordAgeSeconds \(86401\) must be at most 86400/],
    [{ ...k, parallelizationFactor: 0 }, /parallelizationFactor must be an integer from 1 to 10/],
    [{ ...k, parallelizationFactor: 11 }, /parallelizationFactor must be an integer from 1 to 10/],
    [{ ...k, batchSize: 10_001 }, /batchSize must be an integer from 1 to 10000/],
    [{ ...k, maxBatchingWindowSeconds: 301 }, /maxBatchingWindowSeconds must be an integer from 0 to 300/],
    [{ ...k, iteratorAgeAlarmSeconds: 0 }, /iteratorAgeAlarmSeconds must be an integer from 1/],
    [
      { ...k, maxRecordAgeSeconds: 600, iteratorAgeAlarmSeconds: 600 },
      /iteratorAgeAlarmSeconds \(600\) must be under maxRecordAgeSeconds \(600\)/,
    ],
    [{ ...d, streamViewType: "ALL" }, /streamViewType must be one of NEW_AND_OLD_IMAGES, NEW_IMAGE/],
    [
      { ...k, kinesisStream: "arn:aws:kinesis:eu-west-1:1:stream/s" },
      /kinesisStream must be a Kinesis stream/,
    ],
    [{ ...d, sourceTable: "t" }, /sourceTable must be a DynamoDB table/],
    [{ ...k, streamViewType: "NEW_IMAGE" }, /streamViewType applies to the dynamodb-streams delivery only/],
    [
      { ...d, kinesisStream: {} },
      /kinesisStream applies to the kinesis delivery only|must be a Kinesis stream/,
    ],
    [{ ...k, shardCount: 0 }, /shardCount must be an integer from 1 to 500/],
    [{ ...d, shardCount: 1 }, /shardCount applies to the kinesis delivery only/],
    [{ ...k, visibilityTimeoutSeconds: 600 }, /applies to the s3-sqs and sqs/],
    [{ ...k, maxReceiveCount: 5 }, /applies to the s3-sqs and sqs/],
    [{ ...k, maxConcurrency: 5 }, /applies to the s3-sqs and sqs/],
    [{ ...k, fifo: true }, /fifo applies to the sqs delivery only/],
    [{ ...d, objectKeyPrefix: "in/" }, /objectKeyPrefix applies to the S3 deliveries only/],
    [{ pipelineName: "p", delivery: "sqs", retryAttempts: 3 }, /retryAttempts applies to the kinesis and/],
    [{ pipelineName: "p", delivery: "s3-direct", iteratorAgeAlarmSeconds: 60 }, /applies to the kinesis and/],
    [{ pipelineName: "p", delivery: "sqs", parallelizationFactor: 2 }, /applies to the kinesis and/],
  ])("rejects %j", (props, message) => {
    expect(() => construct(props)).toThrow(OptionsError);
    expect(() => construct(props)).toThrow(message);
  });

  it("refuses a given table without a stream, and a view type with a given table", () => {
    const stack = new Stack(new App(), "T");
    const plain = dynamodb.Table.fromTableName(stack, "Plain", "plain");
    const base = { ...INLINE, pipelineName: "p", delivery: "dynamodb-streams" } as const;
    expect(() => new EffectivelyOncePipeline(stack, "A", { ...base, sourceTable: plain })).toThrow(
      /sourceTable has no stream/,
    );
    const streamed = dynamodb.Table.fromTableAttributes(stack, "Streamed", {
      tableName: "s",
      tableStreamArn: "arn:aws:dynamodb:eu-west-1:1:table/s/stream/x",
    });
    expect(
      () =>
        new EffectivelyOncePipeline(stack, "B", {
          ...base,
          sourceTable: streamed,
          streamViewType: "NEW_IMAGE",
        }),
    ).toThrow(/streamViewType applies to the table the construct creates/);
  });

  it("refuses a shard count with a given stream", () => {
    const stack = new Stack(new App(), "T");
    const stream = kinesis.Stream.fromStreamArn(stack, "S", "arn:aws:kinesis:eu-west-1:1:stream/s");
    expect(
      () =>
        new EffectivelyOncePipeline(stack, "P", {
          ...INLINE,
          pipelineName: "p",
          delivery: "kinesis",
          kinesisStream: stream,
          shardCount: 2,
        }),
    ).toThrow(/shardCount applies to the stream the construct creates/);
  });

  it("SQS defaults are unchanged by the stream defaults: batch size 10 on a queue", () => {
    const q = synth({ pipelineName: "q", delivery: "sqs" });
    expect(mappingOf(q.template).BatchSize).toBe(10);
  });
});
