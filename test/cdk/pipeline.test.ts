import { App, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as sns from "aws-cdk-lib/aws-sns";
import { describe, expect, it } from "vitest";
import { EffectivelyOncePipeline, STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "../../src/cdk/index.js";
import { arnOf, INLINE, logicalId, objectsOf, resources, statementsOfRole, synth } from "./helpers.js";

// One synthesized stack per delivery, shared by the assertions below (synth takes about a second).
const direct = synth({ pipelineName: "records", delivery: "s3-direct", recordsTable: true });
const records = synth({
  pipelineName: "records",
  delivery: "s3-direct",
  recordsTable: { keyAttribute: "id" },
  inputBucketRead: false,
});
const bridge = synth({
  pipelineName: "images",
  delivery: "s3-eventbridge",
  outputBucket: true,
  timeoutSeconds: 60,
});
const s3sqs = synth({ pipelineName: "s3q", delivery: "s3-sqs", timeoutSeconds: 45 });
const queue = synth({
  pipelineName: "orders",
  delivery: "sqs",
  recordsTable: { keyAttribute: "chargeId", environmentVariable: "CHARGES_TABLE" },
});
const all = { direct, bridge, s3sqs, queue };

describe("source queue", () => {
  it("visibility timeout is 6 × the function timeout by default", () => {
    s3sqs.template.hasResourceProperties("AWS::Lambda::Function", { Timeout: 45 });
    s3sqs.template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 270 });
    queue.template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 180 });
    expect(s3sqs.pipeline.visibilityTimeoutSeconds).toBe(270);
  });

  it("adds the batching window to the minimum", () => {
    const { template } = synth({ pipelineName: "w", delivery: "sqs", maxBatchingWindowSeconds: 20 });
    template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 6 * 30 + 20 });
    template.hasResourceProperties("AWS::Lambda::EventSourceMapping", { MaximumBatchingWindowInSeconds: 20 });
  });

  it("accepts a longer visibility timeout", () => {
    const { template } = synth({ pipelineName: "v", delivery: "sqs", visibilityTimeoutSeconds: 900 });
    template.hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 900 });
  });

  it("fails synth with a clear message when the visibility timeout is below 6 × the function timeout", () => {
    expect(() =>
      synth({ pipelineName: "v", delivery: "sqs", timeoutSeconds: 60, visibilityTimeoutSeconds: 300 }),
    ).toThrow(/visibilityTimeoutSeconds \(300\) must be at least 6 × timeoutSeconds = 360/);
    expect(() => synth({ pipelineName: "v", delivery: "s3-sqs", visibilityTimeoutSeconds: 179 })).toThrow(
      /must be at least 6 × timeoutSeconds = 180/,
    );
    // The boundary itself is allowed.
    expect(() => synth({ pipelineName: "v", delivery: "sqs", visibilityTimeoutSeconds: 180 })).not.toThrow();
  });

  it("redrives to the DLQ after 5 receives by default, and refuses fewer", () => {
    for (const { stack, pipeline, template } of [s3sqs, queue]) {
      template.hasResourceProperties("AWS::SQS::Queue", {
        RedrivePolicy: {
          deadLetterTargetArn: arnOf(logicalId(stack, pipeline.deadLetterQueue)),
          maxReceiveCount: 5,
        },
      });
    }
    const more = synth({ pipelineName: "m", delivery: "sqs", maxReceiveCount: 8 });
    more.template.hasResourceProperties("AWS::SQS::Queue", { RedrivePolicy: { maxReceiveCount: 8 } });
    expect(() => synth({ pipelineName: "m", delivery: "sqs", maxReceiveCount: 4 })).toThrow(
      /maxReceiveCount \(4\) must be at least 5/,
    );
  });

  it("keeps dead letters 14 days", () => {
    for (const { stack, pipeline, template } of Object.values(all)) {
      const dlq = template.toJSON().Resources[logicalId(stack, pipeline.deadLetterQueue)];
      expect(dlq.Properties.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    }
  });

  it("reports batch item failures", () => {
    for (const { stack, pipeline, template } of [s3sqs, queue]) {
      template.resourceCountIs("AWS::Lambda::EventSourceMapping", 1);
      template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
        EventSourceArn: arnOf(logicalId(stack, pipeline.queue!)),
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        BatchSize: 10,
      });
    }
  });

  it("is a FIFO queue with a FIFO DLQ when asked", () => {
    const { template } = synth({ pipelineName: "f", delivery: "sqs", fifo: true });
    const queues = Object.values(template.findResources("AWS::SQS::Queue"));
    expect(queues).toHaveLength(2);
    for (const q of queues) expect(q.Properties.FifoQueue).toBe(true);
  });
});

describe("async invokes (S3 direct, EventBridge)", () => {
  it("retry twice, then send the event to the DLQ", () => {
    for (const { stack, pipeline, template } of [direct, bridge]) {
      template.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
        MaximumRetryAttempts: 2,
        MaximumEventAgeInSeconds: 6 * 3600,
        DestinationConfig: { OnFailure: { Destination: arnOf(logicalId(stack, pipeline.deadLetterQueue)) } },
      });
    }
  });

  it("S3 notifications invoke the function for creates and removals", () => {
    direct.template.hasResourceProperties("Custom::S3BucketNotifications", {
      NotificationConfiguration: {
        LambdaFunctionConfigurations: [
          Match.objectLike({ Events: ["s3:ObjectCreated:*"] }),
          Match.objectLike({ Events: ["s3:ObjectRemoved:*"] }),
        ],
      },
    });
    direct.template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction",
      Principal: "s3.amazonaws.com",
      SourceArn: arnOf(logicalId(direct.stack, direct.pipeline.inputBucket!)),
    });
  });

  it("key filters go to the notification", () => {
    const { template } = synth({
      pipelineName: "k",
      delivery: "s3-direct",
      objectKeyPrefix: "in/",
      objectKeySuffix: ".csv",
      includeRemovals: false,
    });
    template.hasResourceProperties("Custom::S3BucketNotifications", {
      NotificationConfiguration: {
        LambdaFunctionConfigurations: [
          {
            Events: ["s3:ObjectCreated:*"],
            Filter: {
              Key: {
                FilterRules: [
                  { Name: "suffix", Value: ".csv" },
                  { Name: "prefix", Value: "in/" },
                ],
              },
            },
            LambdaFunctionArn: Match.anyValue(),
          },
        ],
      },
    });
  });

  it("EventBridge: the bucket emits events, a rule matches its object events and dead-letters undeliverable ones", () => {
    const { stack, pipeline, template } = bridge;
    template.hasResourceProperties("Custom::S3BucketNotifications", {
      NotificationConfiguration: { EventBridgeConfiguration: {} },
    });
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: {
        source: ["aws.s3"],
        "detail-type": ["Object Created", "Object Deleted"],
        detail: { bucket: { name: [{ Ref: logicalId(stack, pipeline.inputBucket!) }] } },
      },
      Targets: [
        Match.objectLike({
          Arn: arnOf(logicalId(stack, pipeline.function)),
          DeadLetterConfig: { Arn: arnOf(logicalId(stack, pipeline.deadLetterQueue)) },
          RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86400 },
        }),
      ],
    });
  });

  it("EventBridge: prefix and suffix together become one wildcard", () => {
    const { template } = synth({
      pipelineName: "w",
      delivery: "s3-eventbridge",
      objectKeyPrefix: "raw/",
      objectKeySuffix: ".jpg",
    });
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: { detail: { object: { key: [{ wildcard: "raw/*.jpg" }] } } },
    });
  });

  it("S3 → SQS: the bucket notifies the queue, and only this bucket may send to it", () => {
    const { stack, pipeline, template } = s3sqs;
    template.hasResourceProperties("Custom::S3BucketNotifications", {
      NotificationConfiguration: {
        QueueConfigurations: [
          Match.objectLike({
            Events: ["s3:ObjectCreated:*"],
            QueueArn: arnOf(logicalId(stack, pipeline.queue!)),
          }),
          Match.objectLike({ Events: ["s3:ObjectRemoved:*"] }),
        ],
      },
    });
    template.hasResourceProperties("AWS::SQS::QueuePolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: ["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"],
            Principal: { Service: "s3.amazonaws.com" },
            Condition: { ArnLike: { "aws:SourceArn": arnOf(logicalId(stack, pipeline.inputBucket!)) } },
          }),
        ]),
      },
    });
  });
});

describe("state and records tables", () => {
  it("state table: hash key pk, on demand, TTL on expiresAt, PITR, encrypted", () => {
    expect(STATE_KEY_ATTRIBUTE).toBe("pk");
    expect(TTL_ATTRIBUTE).toBe("expiresAt");
    for (const { stack, pipeline, template } of Object.values(all)) {
      const table = template.toJSON().Resources[logicalId(stack, pipeline.stateTable!)];
      expect(table.Properties).toMatchObject({
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        BillingMode: "PAY_PER_REQUEST",
        TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      });
      expect(table.DeletionPolicy).toBe("Retain");
    }
  });

  it("records table: hash key as configured (default pk), on demand, PITR, encrypted, no TTL", () => {
    for (const [s, key] of [
      [direct, "pk"],
      [records, "id"],
      [queue, "chargeId"],
    ] as const) {
      const table = s.template.toJSON().Resources[logicalId(s.stack, s.pipeline.recordsTable!)];
      expect(table.Properties.KeySchema).toEqual([{ AttributeName: key, KeyType: "HASH" }]);
      expect(table.Properties.AttributeDefinitions).toEqual([{ AttributeName: key, AttributeType: "S" }]);
    }
    const { stack, pipeline, template } = direct;
    const table = template.toJSON().Resources[logicalId(stack, pipeline.recordsTable!)];
    expect(table.Properties).toMatchObject({
      BillingMode: "PAY_PER_REQUEST",
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
    expect(table.Properties.TimeToLiveSpecification).toBeUndefined();
    bridge.template.resourceCountIs("AWS::DynamoDB::Table", 1);
  });
});

describe("encryption and TLS", () => {
  it("buckets: SSE, public access blocked, owner-enforced, TLS 1.2+ only", () => {
    for (const { template } of [direct, bridge, s3sqs]) {
      const buckets = template.findResources("AWS::S3::Bucket");
      for (const [id, bucket] of Object.entries(buckets)) {
        expect(bucket.Properties).toMatchObject({
          BucketEncryption: {
            ServerSideEncryptionConfiguration: [
              { ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } },
            ],
          },
          PublicAccessBlockConfiguration: {
            BlockPublicAcls: true,
            BlockPublicPolicy: true,
            IgnorePublicAcls: true,
            RestrictPublicBuckets: true,
          },
          OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
        });
        template.hasResourceProperties("AWS::S3::BucketPolicy", {
          Bucket: { Ref: id },
          PolicyDocument: {
            Statement: Match.arrayWith([
              Match.objectLike({
                Effect: "Deny",
                Action: "s3:*",
                Principal: { AWS: "*" },
                Condition: { Bool: { "aws:SecureTransport": "false" } },
              }),
              Match.objectLike({
                Effect: "Deny",
                Action: "s3:*",
                Condition: { NumericLessThan: { "s3:TlsVersion": 1.2 } },
              }),
            ]),
          },
        });
      }
    }
    expect(Object.keys(bridge.template.findResources("AWS::S3::Bucket"))).toHaveLength(2);
  });

  it("queues: SSE-SQS and a TLS-only policy", () => {
    for (const { template } of Object.values(all)) {
      const queues = template.findResources("AWS::SQS::Queue");
      for (const [id, q] of Object.entries(queues)) {
        expect(q.Properties.SqsManagedSseEnabled).toBe(true);
        template.hasResourceProperties("AWS::SQS::QueuePolicy", {
          Queues: [{ Ref: id }],
          PolicyDocument: {
            Statement: Match.arrayWith([
              Match.objectLike({
                Effect: "Deny",
                Action: "sqs:*",
                Condition: { Bool: { "aws:SecureTransport": "false" } },
              }),
            ]),
          },
        });
      }
    }
  });
});

describe("function", () => {
  it("runs on Node.js 22 or newer, on ARM64", () => {
    for (const { stack, pipeline, template } of Object.values(all)) {
      const fn = template.toJSON().Resources[logicalId(stack, pipeline.function)];
      const runtime = /^nodejs(\d+)\.x$/.exec(fn.Properties.Runtime);
      expect(runtime, fn.Properties.Runtime).not.toBeNull();
      expect(Number(runtime![1])).toBeGreaterThanOrEqual(22);
      expect(fn.Properties.Architectures).toEqual(["arm64"]);
    }
  });

  it("gets its tables, buckets and metric names through the environment", () => {
    const { stack, pipeline, template } = bridge;
    const fn = template.toJSON().Resources[logicalId(stack, pipeline.function)];
    expect(fn.Properties.Environment.Variables).toEqual({
      STATE_TABLE: { Ref: logicalId(stack, pipeline.stateTable!) },
      OUTPUT_BUCKET: { Ref: logicalId(stack, pipeline.outputBucket!) },
      INPUT_BUCKET: { Ref: logicalId(stack, pipeline.inputBucket!) },
      EONCE_PIPELINE: "images",
      POWERTOOLS_SERVICE_NAME: "images",
      POWERTOOLS_METRICS_NAMESPACE: "EffectivelyOnce",
      NODE_OPTIONS: "--enable-source-maps",
    });
    const env = (s: typeof direct) =>
      s.template.toJSON().Resources[logicalId(s.stack, s.pipeline.function)].Properties.Environment.Variables;
    expect(env(direct).RECORDS_TABLE).toEqual({
      Ref: logicalId(direct.stack, direct.pipeline.recordsTable!),
    });
    expect(env(queue).CHARGES_TABLE).toEqual({ Ref: logicalId(queue.stack, queue.pipeline.recordsTable!) });
    expect(env(queue).RECORDS_TABLE).toBeUndefined();
  });

  it("logs to its own log group, kept 30 days", () => {
    for (const { stack, pipeline, template } of Object.values(all)) {
      const id = logicalId(stack, pipeline.logGroup);
      template.hasResource("AWS::Logs::LogGroup", {
        Properties: { RetentionInDays: 30 },
        DeletionPolicy: "Retain",
      });
      template.hasResourceProperties("AWS::Lambda::Function", { LoggingConfig: { LogGroup: { Ref: id } } });
    }
  });
});

describe("least privilege", () => {
  const logs = (s: typeof direct) => ({
    actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
    resource: arnOf(logicalId(s.stack, s.pipeline.logGroup)),
  });
  const state = (s: typeof direct) => ({
    actions: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
    resource: [arnOf(logicalId(s.stack, s.pipeline.stateTable!))],
  });
  const dlqSend = (s: typeof direct) => ({
    actions: ["sqs:SendMessage"],
    resource: arnOf(logicalId(s.stack, s.pipeline.deadLetterQueue)),
  });
  const consume = (s: typeof direct) => ({
    actions: [
      "sqs:ReceiveMessage",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
      "sqs:ChangeMessageVisibility",
    ],
    resource: arnOf(logicalId(s.stack, s.pipeline.queue!)),
  });
  const roleId = (s: typeof direct) => logicalId(s.stack, s.pipeline.role);
  const sorted = (list: { actions: string[]; resource: unknown }[]) =>
    [...list].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

  it("the role has no managed policies and only Lambda may assume it", () => {
    for (const s of Object.values(all)) {
      const role = s.template.toJSON().Resources[roleId(s)];
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Action: "sts:AssumeRole", Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" } },
      ]);
    }
  });

  it("records (S3 direct → DynamoDB): exactly these actions on exactly these resources", () => {
    const s = direct;
    expect(sorted(statementsOfRole(s.template, roleId(s)))).toEqual(
      sorted([
        logs(s),
        state(s),
        { actions: ["dynamodb:PutItem"], resource: [arnOf(logicalId(s.stack, s.pipeline.recordsTable!))] },
        { actions: ["s3:GetObject"], resource: objectsOf(logicalId(s.stack, s.pipeline.inputBucket!)) },
        dlqSend(s),
      ]),
    );
  });

  it("records as the example runs it (no object reads): no S3 action at all", () => {
    const s = records;
    expect(sorted(statementsOfRole(s.template, roleId(s)))).toEqual(
      sorted([
        logs(s),
        state(s),
        { actions: ["dynamodb:PutItem"], resource: [arnOf(logicalId(s.stack, s.pipeline.recordsTable!))] },
        dlqSend(s),
      ]),
    );
  });

  it("images (EventBridge → output bucket)", () => {
    const s = bridge;
    expect(sorted(statementsOfRole(s.template, roleId(s)))).toEqual(
      sorted([
        logs(s),
        state(s),
        { actions: ["s3:GetObject"], resource: objectsOf(logicalId(s.stack, s.pipeline.inputBucket!)) },
        { actions: ["s3:PutObject"], resource: objectsOf(logicalId(s.stack, s.pipeline.outputBucket!)) },
        dlqSend(s),
      ]),
    );
  });

  it("S3 → SQS", () => {
    const s = s3sqs;
    expect(sorted(statementsOfRole(s.template, roleId(s)))).toEqual(
      sorted([
        logs(s),
        state(s),
        { actions: ["s3:GetObject"], resource: objectsOf(logicalId(s.stack, s.pipeline.inputBucket!)) },
        consume(s),
      ]),
    );
  });

  it("orders (SQS → DynamoDB)", () => {
    const s = queue;
    expect(sorted(statementsOfRole(s.template, roleId(s)))).toEqual(
      sorted([
        logs(s),
        state(s),
        { actions: ["dynamodb:PutItem"], resource: [arnOf(logicalId(s.stack, s.pipeline.recordsTable!))] },
        consume(s),
      ]),
    );
  });

  it("grants narrow further with the options: key prefix, no input read, extra sink actions", () => {
    const s = synth({
      pipelineName: "n",
      delivery: "s3-direct",
      objectKeyPrefix: "in/",
      outputBucket: true,
      outputBucketRead: true,
      recordsTable: { actions: ["dynamodb:PutItem", "dynamodb:GetItem"] },
    });
    const list = statementsOfRole(s.template, roleId(s));
    expect(list).toContainEqual({
      actions: ["s3:GetObject"],
      resource: objectsOf(logicalId(s.stack, s.pipeline.inputBucket!), "in/"),
    });
    expect(list).toContainEqual({
      actions: ["s3:GetObject", "s3:PutObject"],
      resource: objectsOf(logicalId(s.stack, s.pipeline.outputBucket!)),
    });
    expect(list).toContainEqual({
      actions: ["dynamodb:PutItem", "dynamodb:GetItem"],
      resource: [arnOf(logicalId(s.stack, s.pipeline.recordsTable!))],
    });
    const blind = synth({ pipelineName: "b", delivery: "s3-direct", inputBucketRead: false });
    const actions = statementsOfRole(blind.template, roleId(blind)).flatMap((st) => st.actions);
    expect(actions.filter((a) => a.startsWith("s3:"))).toEqual([]);
  });

  it("no wildcard actions and no wildcard resources other than a bucket's own objects", () => {
    for (const s of Object.values(all)) {
      for (const st of statementsOfRole(s.template, roleId(s))) {
        for (const a of st.actions) expect(a).not.toContain("*");
        for (const r of resources(st.resource)) {
          const text = JSON.stringify(r);
          if (text.includes("*")) expect(text).toMatch(/"\/\*"\]\]\}$/);
        }
      }
    }
  });
});

describe("alarms and dashboard", () => {
  const dims = (name: string) => [
    { Name: "pipeline", Value: name },
    { Name: "service", Value: name },
  ];

  it("alarms on DLQ depth, lease lost, failed deliveries and function errors", () => {
    for (const [name, s] of [
      ["records", direct],
      ["orders", queue],
    ] as const) {
      s.template.resourceCountIs("AWS::CloudWatch::Alarm", 4);
      s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/SQS",
        MetricName: "ApproximateNumberOfMessagesVisible",
        Dimensions: [
          {
            Name: "QueueName",
            Value: { "Fn::GetAtt": [logicalId(s.stack, s.pipeline.deadLetterQueue), "QueueName"] },
          },
        ],
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        TreatMissingData: "notBreaching",
      });
      for (const metric of ["leaseLost", "failed"]) {
        s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
          Namespace: "EffectivelyOnce",
          MetricName: metric,
          Dimensions: dims(name),
          Statistic: "Sum",
          Period: 300,
          Threshold: 1,
        });
      }
      s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        Namespace: "AWS/Lambda",
        MetricName: "Errors",
      });
    }
  });

  it("alarm actions are wired when given", () => {
    const stack = new Stack(new App(), "T");
    const topic = sns.Topic.fromTopicArn(stack, "Topic", "arn:aws:sns:eu-west-1:111111111111:alerts");
    new EffectivelyOncePipeline(stack, "P", {
      pipelineName: "a",
      delivery: "sqs",
      ...INLINE,
      alarmActions: [new actions.SnsAction(topic)],
      failedAlarmThreshold: 10,
    });
    const template = Template.fromStack(stack);
    const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm"));
    expect(alarms).toHaveLength(4);
    for (const a of alarms) {
      expect(a.Properties.AlarmActions).toEqual(["arn:aws:sns:eu-west-1:111111111111:alerts"]);
      expect(a.Properties.OKActions).toEqual(["arn:aws:sns:eu-west-1:111111111111:alerts"]);
    }
    template.hasResourceProperties("AWS::CloudWatch::Alarm", { MetricName: "failed", Threshold: 10 });
  });

  it("the dashboard shows processed, duplicate, stale, superseded and receive count of this pipeline", () => {
    const body = JSON.stringify(direct.template.findResources("AWS::CloudWatch::Dashboard"));
    for (const metric of [
      "processed",
      "duplicate",
      "stale",
      "superseded",
      "receiveCount",
      "leaseLost",
      "failed",
    ]) {
      expect(body).toContain(
        `[\\"EffectivelyOnce\\",\\"${metric}\\",\\"pipeline\\",\\"records\\",\\"service\\",\\"records\\"`,
      );
    }
    expect(body).toContain("ApproximateNumberOfMessagesVisible");
    expect(body).toContain("Latest duplicate and stale deliveries");
    const none = synth({ pipelineName: "d", delivery: "sqs", dashboard: false });
    none.template.resourceCountIs("AWS::CloudWatch::Dashboard", 0);
  });

  it("saved Logs Insights queries find duplicate and stale lines", () => {
    direct.template.hasResourceProperties("AWS::Logs::QueryDefinition", {
      Name: "effectively-once/records/duplicate-and-stale",
      QueryString: Match.stringLikeRegexp('filter status in \\["duplicate", "stale"\\]'),
      LogGroupNames: [{ Ref: logicalId(direct.stack, direct.pipeline.logGroup) }],
    });
    direct.template.resourceCountIs("AWS::Logs::QueryDefinition", 3);
  });
});

describe("removal", () => {
  it("retain (default): tables, buckets and the log group outlive the stack", () => {
    const t = bridge.template.toJSON().Resources as Record<string, { Type: string; DeletionPolicy?: string }>;
    const kept = Object.values(t).filter((r) =>
      ["AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Logs::LogGroup"].includes(r.Type),
    );
    expect(kept.length).toBe(4);
    for (const r of kept) expect(r.DeletionPolicy, r.Type).toBe("Retain");
    bridge.template.hasResourceProperties("AWS::DynamoDB::Table", { DeletionProtectionEnabled: true });
  });

  it("destroy: deleted with the stack, buckets emptied first", () => {
    const { template } = synth({
      pipelineName: "x",
      delivery: "s3-direct",
      removal: "destroy",
      recordsTable: true,
    });
    for (const type of ["AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Logs::LogGroup"]) {
      for (const r of Object.values(template.findResources(type)))
        expect(r.DeletionPolicy, type).toBe("Delete");
    }
    template.resourceCountIs("Custom::S3AutoDeleteObjects", 1);
    for (const r of Object.values(template.findResources("AWS::DynamoDB::Table"))) {
      expect(r.Properties.DeletionProtectionEnabled).toBe(false);
    }
  });

  it("access logs go to the given bucket", () => {
    const stack = new Stack(new App(), "T");
    const logsBucket = s3.Bucket.fromBucketName(stack, "Logs", "my-access-logs");
    new EffectivelyOncePipeline(stack, "P", {
      pipelineName: "l",
      delivery: "s3-direct",
      ...INLINE,
      accessLogsBucket: logsBucket,
    });
    Template.fromStack(stack).hasResourceProperties("AWS::S3::Bucket", {
      LoggingConfiguration: { DestinationBucketName: "my-access-logs", LogFilePrefix: "l/InputBucket/" },
    });
  });
});
