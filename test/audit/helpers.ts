import { auditModel, type Finding, TemplateModel } from "../../src/audit/index.js";

export type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** The findings of a template made of these resources. */
export function audit(resources: Resources, parameters: string[] = []): Finding[] {
  const Parameters = Object.fromEntries(parameters.map((p) => [p, { Type: "String" }]));
  return auditModel(TemplateModel.fromTemplate({ Parameters, Resources: resources }));
}

/** Rule and resource of each finding, the pairs a test compares. */
export function pairs(findings: Finding[]): string[] {
  return findings.map((f) => `${f.rule} ${f.resource}`).sort();
}

export const fn = (props: Record<string, unknown> = {}) => ({
  Type: "AWS::Lambda::Function",
  Properties: { Runtime: "nodejs22.x", Handler: "index.handler", Code: { ZipFile: "x" }, ...props },
});

export const queue = (props: Record<string, unknown> = {}) => ({
  Type: "AWS::SQS::Queue",
  Properties: props,
});

/** A redrive to the `Dlq` resource. */
export const redrive = (maxReceiveCount: unknown = 5) => ({
  deadLetterTargetArn: { "Fn::GetAtt": ["Dlq", "Arn"] },
  maxReceiveCount,
});

export const mapping = (
  source: unknown,
  fnRef: unknown = { Ref: "Fn" },
  props: Record<string, unknown> = {},
) => ({
  Type: "AWS::Lambda::EventSourceMapping",
  Properties: {
    EventSourceArn: source,
    FunctionName: fnRef,
    FunctionResponseTypes: ["ReportBatchItemFailures"],
    ...props,
  },
});

/** The settings of a safe stream mapping (what EffectivelyOncePipeline sets), on-failure to the `Dlq` resource. */
export const SAFE_STREAM = {
  StartingPosition: "TRIM_HORIZON",
  BisectBatchOnFunctionError: true,
  MaximumRetryAttempts: 10,
  MaximumRecordAgeInSeconds: 86_400,
  DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": ["Dlq", "Arn"] } } },
};

/** Kinesis → Lambda (`Kinesis`) and DynamoDB streams → Lambda (`Ddb`), every setting safe but `props`. */
export function streamPipeline(props: Record<string, unknown> = {}): Resources {
  return {
    Dlq: queue(),
    Stream: { Type: "AWS::Kinesis::Stream", Properties: { ShardCount: 1, Name: "clicks" } },
    Table: {
      Type: "AWS::DynamoDB::Table",
      Properties: {
        TableName: "profiles",
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
        StreamSpecification: { StreamViewType: "NEW_AND_OLD_IMAGES" },
      },
    },
    Fn: fn(),
    Kinesis: mapping({ "Fn::GetAtt": ["Stream", "Arn"] }, { Ref: "Fn" }, { ...SAFE_STREAM, ...props }),
    Ddb: mapping({ "Fn::GetAtt": ["Table", "StreamArn"] }, { Ref: "Fn" }, { ...SAFE_STREAM, ...props }),
  };
}

/** SQS → Lambda, every other setting safe: the visibility timeout and the function timeout vary. */
export function sqsPipeline(visibility: unknown, timeout: unknown): Resources {
  const queueProps: Record<string, unknown> = { RedrivePolicy: redrive() };
  if (visibility !== undefined) queueProps.VisibilityTimeout = visibility;
  return {
    Dlq: queue(),
    Queue: queue(queueProps),
    Fn: fn(timeout === undefined ? {} : { Timeout: timeout }),
    Source: mapping({ "Fn::GetAtt": ["Queue", "Arn"] }),
  };
}

export const guardTable = (props: Record<string, unknown> = {}) => ({
  Type: "AWS::DynamoDB::Table",
  Properties: {
    AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
    KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
    TimeToLiveSpecification: { AttributeName: "expiresAt", Enabled: true },
    ...props,
  },
});
