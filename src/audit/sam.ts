import { asObject, isObject, type Json } from "./template.js";

/** Stands for a resource the SAM transform creates itself (a DLQ of `Type: SQS`): present, but not in the template. */
const SAM_CREATED = "(created by the SAM transform)";

type Resources = Record<string, Json>;

/**
 * A SAM template's functions as the CloudFormation resources the transform deploys, so that the rules see one
 * shape: an AWS::Lambda::Function (Timeout, DeadLetterConfig), its EventInvokeConfig, and per event an event source
 * mapping, SNS subscription, EventBridge rule or bucket notification, named `<Function><Event>` as SAM names them.
 * Globals.Function applies. Other SAM resources pass through unchanged.
 */
export function lowerSam(doc: Json): Json {
  const input = asObject(doc.Resources);
  if (!Object.values(input).some((r) => asObject(r).Type === "AWS::Serverless::Function")) return doc;
  const globals = asObject(asObject(doc.Globals).Function);
  const out: Resources = {};
  for (const [id, r] of Object.entries(input)) out[id] = asObject(r);
  for (const [id, r] of Object.entries(input)) {
    const res = asObject(r);
    if (res.Type !== "AWS::Serverless::Function") continue;
    lowerFunction(out, id, { ...globals, ...asObject(res.Properties) });
  }
  return { ...doc, Resources: out };
}

function lowerFunction(out: Resources, id: string, p: Json): void {
  const dlq = asObject(p.DeadLetterQueue);
  out[id] = {
    Type: "AWS::Lambda::Function",
    Properties: {
      Timeout: p.Timeout,
      FunctionName: p.FunctionName,
      Tags: p.Tags,
      ...(isObject(p.DeadLetterQueue)
        ? { DeadLetterConfig: { TargetArn: dlq.TargetArn ?? SAM_CREATED } }
        : {}),
    },
  };
  const onFailure = asObject(asObject(asObject(p.EventInvokeConfig).DestinationConfig).OnFailure);
  if (onFailure.Type !== undefined || onFailure.Destination !== undefined) {
    out[`${id}EventInvokeConfig`] = {
      Type: "AWS::Lambda::EventInvokeConfig",
      Properties: {
        FunctionName: { Ref: id },
        Qualifier: "$LATEST",
        DestinationConfig: { OnFailure: { Destination: onFailure.Destination ?? SAM_CREATED } },
      },
    };
  }
  for (const [name, event] of Object.entries(asObject(p.Events))) {
    lowerEvent(out, id, `${id}${name}`, asObject(event));
  }
}

function lowerEvent(out: Resources, fn: string, id: string, event: Json): void {
  const p = asObject(event.Properties);
  const arn = { "Fn::GetAtt": [fn, "Arn"] };
  switch (event.Type) {
    case "SQS":
    case "Kinesis":
    case "DynamoDB": {
      const source = event.Type === "SQS" ? p.Queue : p.Stream;
      const { Queue: _q, Stream: _s, ...rest } = p;
      out[id] = {
        Type: "AWS::Lambda::EventSourceMapping",
        Properties: { ...rest, EventSourceArn: source, FunctionName: { Ref: fn } },
      };
      return;
    }
    case "SNS":
      // With SqsSubscription SAM puts a queue between topic and function: a poll, not an async invoke.
      if (p.SqsSubscription) return;
      out[id] = {
        Type: "AWS::SNS::Subscription",
        Properties: { Protocol: "lambda", TopicArn: p.Topic, Endpoint: arn },
      };
      return;
    case "EventBridgeRule":
    case "CloudWatchEvent":
    case "Schedule":
    case "ScheduleV2":
      out[id] = {
        Type: "AWS::Events::Rule",
        Properties: { EventPattern: p.Pattern, Targets: [ruleTarget(id, p, arn)] },
      };
      return;
    case "S3":
      addBucketNotification(out, p, arn);
      return;
  }
}

function ruleTarget(id: string, p: Json, arn: unknown): Json {
  const dlc = p.DeadLetterConfig;
  return {
    Id: `${id}Target`,
    Arn: arn,
    ...(isObject(dlc) ? { DeadLetterConfig: { Arn: dlc.Arn ?? SAM_CREATED } } : {}),
  };
}

/** SAM's S3 event names a bucket of the same template (`Bucket: !Ref B`): the notification goes on that bucket. */
function addBucketNotification(out: Resources, p: Json, arn: unknown): void {
  const bucketId = asObject(p.Bucket).Ref;
  const bucket = typeof bucketId === "string" ? out[bucketId] : undefined;
  if (!bucket) return;
  const props = asObject(bucket.Properties);
  const config = asObject(props.NotificationConfiguration);
  const events = Array.isArray(p.Events) ? p.Events : [p.Events];
  const added = events.map((e) => ({ Event: e, Function: arn }));
  const lambdas = [
    ...(Array.isArray(config.LambdaConfigurations) ? config.LambdaConfigurations : []),
    ...added,
  ];
  out[bucketId as string] = {
    ...bucket,
    Properties: { ...props, NotificationConfiguration: { ...config, LambdaConfigurations: lambdas } },
  };
}
