import { attributeOf, type Resolved, resolve } from "./resolve.js";
import { asArray, asObject, type Resource, type TemplateModel } from "./template.js";

export const FUNCTION_TYPES = ["AWS::Lambda::Function", "AWS::Serverless::Function"];
export const QUEUE = "AWS::SQS::Queue";
export const TABLE_TYPES = ["AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"];

/** A resource that references another: where the reference is written, and what it resolved to. */
export interface Link {
  /** The resource holding the reference (reported as the finding's resource). */
  from: Resource;
  /** Where in `from` (`EventSourceArn`, `Targets[0].Arn`): for messages. */
  at: string;
  /** The reference as written. */
  value: unknown;
  target: Resolved;
}

/** The function a `FunctionName`/ARN names, through an alias or a version to the function itself. */
export function resolveFunction(model: TemplateModel, value: unknown): Resolved {
  let r = resolve(model, value);
  // Alias → Version → Function: at most two hops; a cycle in a broken template must not loop.
  for (let hop = 0; hop < 2 && r.kind === "resource"; hop++) {
    const t = r.resource.type;
    if (t !== "AWS::Lambda::Alias" && t !== "AWS::Lambda::Version") break;
    r = resolve(model, r.resource.properties.FunctionName);
  }
  return r;
}

export type BatchSourceKind = "sqs" | "kinesis" | "dynamodb-streams";

/** What an event source mapping polls: a queue, a stream, or neither (Kafka, MQ, DocumentDB: no batch rule). */
export function batchSourceKind(model: TemplateModel, esm: Resource): BatchSourceKind | "other" | undefined {
  const arn = esm.properties.EventSourceArn;
  if (arn === undefined) return "other"; // self-managed Kafka: SelfManagedEventSource, no ARN
  const r = resolve(model, arn);
  if (r.kind === "resource") {
    if (r.resource.type === QUEUE) return "sqs";
    if (r.resource.type === "AWS::Kinesis::Stream" || r.resource.type === "AWS::Kinesis::StreamConsumer")
      return "kinesis";
    // `!GetAtt Table.StreamArn`, or a literal stream ARN of a table of this template (`…:table/T/stream/…`).
    const streamArn = attributeOf(arn) === "StreamArn" || (typeof arn === "string" && /\/stream\//.test(arn));
    if (TABLE_TYPES.includes(r.resource.type) && streamArn) return "dynamodb-streams";
    return "other";
  }
  const text = typeof arn === "string" ? arn : JSON.stringify(arn);
  if (/:sqs:/.test(text)) return "sqs";
  if (/:kinesis:/.test(text)) return "kinesis";
  if (/:dynamodb:.*\/stream\//.test(text)) return "dynamodb-streams";
  if (/:(kafka|mq|rds|docdb):/.test(text)) return "other";
  return undefined;
}

/** How a finding names each batch source. */
export const BATCH_SOURCE_LABEL: Record<BatchSourceKind, string> = {
  sqs: "SQS queue",
  kinesis: "Kinesis stream",
  "dynamodb-streams": "DynamoDB stream",
};

/** An event source mapping of a Kinesis stream or a DynamoDB stream, and which. */
export interface StreamMapping {
  esm: Resource;
  kind: "kinesis" | "dynamodb-streams";
}

/** The mappings that poll a stream: by the source's type (a stream, a table's StreamArn) or its literal ARN. */
export function streamMappings(model: TemplateModel): StreamMapping[] {
  return model.ofType("AWS::Lambda::EventSourceMapping").flatMap((esm) => {
    const kind = batchSourceKind(model, esm);
    return kind === "kinesis" || kind === "dynamodb-streams" ? [{ esm, kind }] : [];
  });
}

/** Where each notification configuration names its target: in a bucket's own property, and in CDK's custom resource. */
const BUCKET_NOTIFICATIONS = [
  ["LambdaConfigurations", "Function"],
  ["QueueConfigurations", "Queue"],
  ["TopicConfigurations", "Topic"],
] as const;
const CDK_NOTIFICATIONS = [
  ["LambdaFunctionConfigurations", "LambdaFunctionArn"],
  ["QueueConfigurations", "QueueArn"],
  ["TopicConfigurations", "TopicArn"],
] as const;

/** How S3 events leave a bucket: its notification configurations (the bucket's own, or CDK's custom resource). */
export function s3Notifications(model: TemplateModel): Link[] {
  return [
    ...model.ofType("AWS::S3::Bucket").flatMap((b) => notificationLinks(model, b, BUCKET_NOTIFICATIONS)),
    ...model
      .ofType("Custom::S3BucketNotifications")
      .flatMap((c) => notificationLinks(model, c, CDK_NOTIFICATIONS)),
  ];
}

function notificationLinks(
  model: TemplateModel,
  from: Resource,
  kinds: readonly (readonly [list: string, key: string])[],
): Link[] {
  const n = asObject(from.properties.NotificationConfiguration);
  return kinds.flatMap(([list, key]) =>
    asArray(n[list]).map((c, i) => link(model, from, `${list}[${i}].${key}`, asObject(c)[key])),
  );
}

/** Each target of each EventBridge rule, with the target's own settings. */
export interface RuleTarget extends Link {
  index: number;
  settings: Record<string, unknown>;
}

export function ruleTargets(model: TemplateModel): RuleTarget[] {
  return model.ofType("AWS::Events::Rule").flatMap((rule) =>
    asArray(rule.properties.Targets).map((t, index) => {
      const settings = asObject(t);
      return { ...link(model, rule, `Targets[${index}].Arn`, settings.Arn), index, settings };
    }),
  );
}

/** A rule whose pattern matches S3's events (`source: aws.s3`). */
export function isS3Rule(rule: Resource): boolean {
  const source = asObject(rule.properties.EventPattern).source;
  return asArray(source).includes("aws.s3") || source === "aws.s3";
}

/** SNS subscriptions (standalone and inline in the topic) with their protocol. */
export function snsSubscriptions(model: TemplateModel): (Link & { protocol: string })[] {
  const out: (Link & { protocol: string })[] = [];
  for (const s of model.ofType("AWS::SNS::Subscription")) {
    const protocol = String(s.properties.Protocol ?? "").toLowerCase();
    out.push({ ...link(model, s, "Endpoint", s.properties.Endpoint), protocol });
  }
  for (const topic of model.ofType("AWS::SNS::Topic")) {
    asArray(topic.properties.Subscription).forEach((sub, i) => {
      const s = asObject(sub);
      const protocol = String(s.Protocol ?? "").toLowerCase();
      out.push({ ...link(model, topic, `Subscription[${i}].Endpoint`, s.Endpoint), protocol });
    });
  }
  return out;
}

/** Links whose target is a function, i.e. the asynchronous invokes of Lambda (S3, SNS, EventBridge). */
export function asyncInvokes(model: TemplateModel): Link[] {
  const candidates: Link[] = [
    ...s3Notifications(model).filter((l) => l.at.startsWith("Lambda")),
    ...snsSubscriptions(model).filter((s) => s.protocol === "lambda"),
    ...ruleTargets(model),
  ];
  return candidates
    .map((l) => ({ ...l, target: resolveFunction(model, l.value) }))
    .filter((l) => l.target.kind !== "resource" || FUNCTION_TYPES.includes(l.target.resource.type))
    .filter((l) => l.target.kind === "resource" || looksLikeFunction(l));
}

function link(model: TemplateModel, from: Resource, at: string, value: unknown): Link {
  return { from, at, value, target: resolve(model, value) };
}

/** An unresolved target counts as a function when its reference says so (`:function:`, a Lambda-only field). */
function looksLikeFunction(l: Link): boolean {
  if (l.at.startsWith("Lambda")) return true;
  if (l.from.type === "AWS::SNS::Subscription" || l.from.type === "AWS::SNS::Topic") return true;
  return l.target.kind !== "resource" && /:function:|lambda/i.test(l.target.text);
}

/** Ids of the queues something dead-letters into: redrive targets, on-failure destinations, DLQs. */
export function deadLetterQueueIds(model: TemplateModel): Set<string> {
  const values: unknown[] = [];
  for (const q of model.ofType(QUEUE)) values.push(asObject(q.properties.RedrivePolicy).deadLetterTargetArn);
  for (const c of model.ofType("AWS::Lambda::EventInvokeConfig")) {
    const d = asObject(c.properties.DestinationConfig);
    values.push(asObject(d.OnFailure).Destination, asObject(d.OnSuccess).Destination);
  }
  for (const f of model.ofType(...FUNCTION_TYPES))
    values.push(asObject(f.properties.DeadLetterConfig).TargetArn);
  for (const m of model.ofType("AWS::Lambda::EventSourceMapping")) {
    values.push(asObject(asObject(m.properties.DestinationConfig).OnFailure).Destination);
  }
  for (const t of ruleTargets(model)) values.push(asObject(t.settings.DeadLetterConfig).Arn);
  const ids = new Set<string>();
  for (const v of values) {
    const r = v === undefined ? undefined : resolve(model, v);
    if (r?.kind === "resource") ids.add(r.resource.id);
  }
  return ids;
}

/** Event source mappings with what they poll and which function they invoke. */
export interface Mapping {
  esm: Resource;
  source: Resolved;
  function: Resolved;
}

export function mappings(model: TemplateModel): Mapping[] {
  return model.ofType("AWS::Lambda::EventSourceMapping").map((esm) => ({
    esm,
    source: resolve(model, esm.properties.EventSourceArn),
    function: resolveFunction(model, esm.properties.FunctionName),
  }));
}

/** The queues a pipeline reads from: polled by a function, or fed by S3, SNS or EventBridge; never the DLQs. */
export function sourceQueues(model: TemplateModel): Map<string, Resource> {
  const dlqs = deadLetterQueueIds(model);
  const fed = [
    ...mappings(model).map((m) => m.source),
    ...s3Notifications(model).map((l) => l.target),
    ...snsSubscriptions(model).map((l) => l.target),
    ...ruleTargets(model).map((l) => l.target),
  ];
  const out = new Map<string, Resource>();
  for (const r of fed) {
    if (r.kind === "resource" && r.resource.type === QUEUE && !dlqs.has(r.resource.id)) {
      out.set(r.resource.id, r.resource);
    }
  }
  return out;
}

/**
 * The functions an event sent to `value` runs: the function it names, the functions polling the queue it names, or
 * those a topic's subscriptions reach (directly or through a queue). Unresolved targets reach none.
 */
export function functionsReached(model: TemplateModel, value: unknown, hops = 2): Resource[] {
  const r = resolveFunction(model, value);
  if (r.kind !== "resource") return [];
  const target = r.resource;
  if (FUNCTION_TYPES.includes(target.type)) return [target];
  if (target.type === QUEUE) {
    return mappings(model).flatMap((m) =>
      m.source.kind === "resource" && m.source.resource.id === target.id && m.function.kind === "resource"
        ? [m.function.resource]
        : [],
    );
  }
  // Topic → queue → function at most: a template cannot loop a topic into itself, but a broken one must not hang.
  if (target.type !== "AWS::SNS::Topic" || hops === 0) return [];
  return topicEndpoints(model, target).flatMap((e) => functionsReached(model, e, hops - 1));
}

/** The endpoints of a topic's subscriptions: standalone ones naming it, and its own inline ones. */
function topicEndpoints(model: TemplateModel, topic: Resource): unknown[] {
  const standalone = model.ofType("AWS::SNS::Subscription").filter((s) => {
    const t = resolve(model, s.properties.TopicArn);
    return t.kind === "resource" && t.resource.id === topic.id;
  });
  return [
    ...standalone.map((s) => s.properties.Endpoint),
    ...asArray(topic.properties.Subscription).map((s) => asObject(s).Endpoint),
  ];
}
