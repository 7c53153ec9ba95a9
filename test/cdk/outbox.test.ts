import { App, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as events from "aws-cdk-lib/aws-events";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sns from "aws-cdk-lib/aws-sns";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { describe, expect, it } from "vitest";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";
import { OptionsError } from "../../src/core/errors.js";
import { arnOf, INLINE, logicalId, resources, statementsOfRole, synth } from "./helpers.js";

const RELAY = {
  relayCode: lambda.Code.fromInline("export const handler = async () => ({ batchItemFailures: [] });"),
  relayHandler: "index.handler",
} as const;

/** A pipeline with an outbox whose destinations are made in the same stack. */
function withDestinations(props: Partial<EffectivelyOncePipelineProps> = {}) {
  const stack = new Stack(new App(), "Outbox");
  const queue = new sqs.Queue(stack, "Orders", { enforceSSL: true });
  const topic = new sns.Topic(stack, "Events", { enforceSSL: true });
  const bus = new events.EventBus(stack, "Bus");
  const pipeline = new EffectivelyOncePipeline(stack, "Pipeline", {
    ...INLINE,
    pipelineName: "shop",
    delivery: "sqs",
    outbox: { ...RELAY, queues: [queue], topics: [topic], eventBuses: [bus] },
    ...props,
  });
  return { stack, pipeline, queue, topic, bus, template: Template.fromStack(stack) };
}

describe("the outbox option", () => {
  const s = withDestinations();
  const outbox = s.pipeline.outbox!;
  const tableId = logicalId(s.stack, outbox.table);

  it("creates the outbox table: subject/order keys, stream NEW_IMAGE, TTL expiresAt, PITR, on demand", () => {
    s.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [
        { AttributeName: "subject", KeyType: "HASH" },
        { AttributeName: "order", KeyType: "RANGE" },
      ],
      BillingMode: "PAY_PER_REQUEST",
      StreamSpecification: { StreamViewType: "NEW_IMAGE" },
      TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      DeletionProtectionEnabled: true,
      LocalSecondaryIndexes: [Match.objectLike({ IndexName: "unsentBySubject" })],
      GlobalSecondaryIndexes: [Match.objectLike({ IndexName: "pending" })],
    });
    s.template.hasResource("AWS::DynamoDB::Table", {
      Properties: Match.objectLike({ StreamSpecification: { StreamViewType: "NEW_IMAGE" } }),
      DeletionPolicy: "Retain",
    });
  });

  it("names the table to the function (OUTBOX_TABLE) and lets it put entries, nothing more", () => {
    s.template.hasResourceProperties("AWS::Lambda::Function", {
      Description: Match.stringLikeRegexp("\\(sqs\\)$"),
      Environment: { Variables: Match.objectLike({ OUTBOX_TABLE: { Ref: tableId } }) },
    });
    const onTable = statementsOfRole(s.template, logicalId(s.stack, s.pipeline.role)).filter((st) =>
      JSON.stringify(resources(st.resource)).includes(tableId),
    );
    expect(onTable).toEqual([{ actions: ["dynamodb:PutItem"], resource: arnOf(tableId) }]);
  });

  it("runs the relay on the table's stream with the stream delivery's safe mapping, failures to the DLQ", () => {
    s.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      FunctionName: { Ref: logicalId(s.stack, outbox.relay) },
      EventSourceArn: { "Fn::GetAtt": [tableId, "StreamArn"] },
      StartingPosition: "TRIM_HORIZON",
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 43_200,
      ParallelizationFactor: 1,
      BatchSize: 100,
      DestinationConfig: {
        OnFailure: { Destination: arnOf(logicalId(s.stack, s.pipeline.deadLetterQueue)) },
      },
    });
    s.template.hasResourceProperties("AWS::Lambda::Function", {
      Handler: "index.handler",
      Role: arnOf(logicalId(s.stack, outbox.relayRole)),
      Environment: { Variables: Match.objectLike({ OUTBOX_TABLE: { Ref: tableId } }) },
    });
  });

  it("lets the relay mark entries and send to the listed destinations only", () => {
    const statements = statementsOfRole(s.template, logicalId(s.stack, outbox.relayRole));
    const actionsOn = (id: string) =>
      statements
        .filter((st) => JSON.stringify(resources(st.resource)).includes(`"${id}"`))
        .flatMap((st) => st.actions)
        .sort();
    expect(actionsOn(logicalId(s.stack, s.queue))).toEqual([
      "sqs:GetQueueAttributes",
      "sqs:GetQueueUrl",
      "sqs:SendMessage",
    ]);
    expect(actionsOn(logicalId(s.stack, s.topic))).toEqual(["sns:Publish"]);
    expect(actionsOn(logicalId(s.stack, s.bus))).toEqual(["events:PutEvents"]);
    const onTable = statements.filter((st) => JSON.stringify(st.resource) === JSON.stringify(arnOf(tableId)));
    expect(onTable).toEqual([{ actions: ["dynamodb:UpdateItem"], resource: arnOf(tableId) }]);
    // The pipeline's function may not send: only the relay does.
    const fnActions = statementsOfRole(s.template, logicalId(s.stack, s.pipeline.role)).flatMap(
      (st) => st.actions,
    );
    expect(fnActions).not.toContain("sns:Publish");
    expect(fnActions).not.toContain("events:PutEvents");
  });

  it("gives a FIFO pipeline's relay a standard DLQ (a stream mapping's on-failure destination cannot be FIFO)", () => {
    const fifo = withDestinations({ fifo: true });
    const dlq = fifo.pipeline.outbox!.relayDeadLetterQueue;
    expect(dlq).not.toBe(fifo.pipeline.deadLetterQueue);
    expect(dlq.fifo).toBe(false);
    fifo.template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
      DestinationConfig: { OnFailure: { Destination: arnOf(logicalId(fifo.stack, dlq as sqs.Queue)) } },
    });
  });

  it("has no outbox table nor relay without the option", () => {
    const plain = synth({ pipelineName: "plain", delivery: "sqs" });
    expect(plain.pipeline.outbox).toBeUndefined();
    plain.template.resourceCountIs("AWS::Lambda::EventSourceMapping", 1);
    expect(JSON.stringify(plain.template.toJSON())).not.toContain("OUTBOX_TABLE");
  });

  it("refuses an outbox without relay code, with both, or with bad settings", () => {
    const make = (outbox: object) => () =>
      synth({ pipelineName: "bad", delivery: "sqs", outbox } as EffectivelyOncePipelineProps);
    expect(make({})).toThrow(/relayEntry/);
    expect(make({ ...RELAY, relayEntry: "relay.ts" })).toThrow(OptionsError);
    expect(make({ relayCode: RELAY.relayCode })).toThrow(/relayHandler/);
    expect(make({ ...RELAY, maxRecordAgeSeconds: 2 * 86_400 })).toThrow(OptionsError);
    expect(make({ ...RELAY, retryAttempts: -1 })).toThrow(OptionsError);
    expect(make({ ...RELAY, queues: ["not a queue"] })).toThrow(OptionsError);
    expect(make({ ...RELAY, relay: true })).toThrow(OptionsError);
  });
});
