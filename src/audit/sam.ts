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
    lowerFunction(out, id, { ...globals, ...asObject(res.Properties) }, res.Metadata);
  }
  return { ...doc, Resources: out };
}

/**
 * The function's Metadata goes on every resource lowered from it: the function is where a SAM author can write a
 * suppression, and the findings name the lowered resources (`<Function><Event>`).
 */
function lowerFunction(out: Resources, id: string, p: Json, metadata: unknown): void {
  const dlq = asObject(p.DeadLetterQueue);
  const created = [id];
  out[id] = {
    Type: "AWS::Lambda::Function",
    Properties: {
      Timeout: p.Timeout,
      FunctionName: p.FunctionName,
      Tags: p.Tags,
      Role: p.Role ?? lowerPolicies(out, id, p.Policies),
      ...(isObject(p.DeadLetterQueue)
        ? { DeadLetterConfig: { TargetArn: dlq.TargetArn ?? SAM_CREATED } }
        : {}),
    },
  };
  const onFailure = asObject(asObject(asObject(p.EventInvokeConfig).DestinationConfig).OnFailure);
  if (onFailure.Type !== undefined || onFailure.Destination !== undefined) {
    created.push(`${id}EventInvokeConfig`);
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
    if (lowerEvent(out, id, `${id}${name}`, asObject(event))) created.push(`${id}${name}`);
  }
  if (metadata === undefined) return;
  for (const key of created) out[key] = { ...out[key], Metadata: metadata };
}

/** SAM's policy templates that grant item writes (PutItem and UpdateItem among them) on their TableName. */
const TABLE_WRITE_TEMPLATES = ["DynamoDBCrudPolicy", "DynamoDBWritePolicy"];

/**
 * The role SAM creates for a function without `Role` (`<Function>Role`), with what can be read of its `Policies`:
 * policy documents, and the policy templates that write a table. Managed policy names are skipped (their
 * statements are not in the template). Returns the role's ARN, or undefined when there are no policies.
 */
function lowerPolicies(out: Resources, id: string, policies: unknown): unknown {
  if (policies === undefined) return undefined;
  const list = Array.isArray(policies) ? policies : [policies];
  const documents = list.filter(isObject).flatMap((policy) => {
    if (policy.Statement !== undefined) return [policy];
    const template = TABLE_WRITE_TEMPLATES.find((t) => policy[t] !== undefined);
    if (!template) return [];
    const tableName = asObject(policy[template]).TableName;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's ${} syntax, not JavaScript's
    const arn = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${tableName}";
    const Resource = { "Fn::Sub": [arn, { tableName }] };
    return [
      { Statement: [{ Effect: "Allow", Action: ["dynamodb:PutItem", "dynamodb:UpdateItem"], Resource }] },
    ];
  });
  out[`${id}Role`] = {
    Type: "AWS::IAM::Role",
    Properties: {
      Policies: documents.map((PolicyDocument, i) => ({ PolicyName: `${id}Policy${i}`, PolicyDocument })),
    },
  };
  return { "Fn::GetAtt": [`${id}Role`, "Arn"] };
}

/** Lowers one event; true when it created a resource named `id` (an S3 event changes its bucket instead). */
function lowerEvent(out: Resources, fn: string, id: string, event: Json): boolean {
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
      return true;
    }
    case "SNS":
      // With SqsSubscription SAM puts a queue between topic and function: a poll, not an async invoke.
      if (p.SqsSubscription) return false;
      out[id] = {
        Type: "AWS::SNS::Subscription",
        Properties: { Protocol: "lambda", TopicArn: p.Topic, Endpoint: arn },
      };
      return true;
    case "EventBridgeRule":
    case "CloudWatchEvent":
    case "Schedule":
    case "ScheduleV2":
      out[id] = {
        Type: "AWS::Events::Rule",
        Properties: { EventPattern: p.Pattern, Targets: [ruleTarget(id, p, arn)] },
      };
      return true;
    case "S3":
      addBucketNotification(out, p, arn);
      return false;
  }
  return false;
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
