import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sources from "aws-cdk-lib/aws-lambda-event-sources";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sqs from "aws-cdk-lib/aws-sqs";
import {
  OUTBOX_ATTRIBUTES,
  OUTBOX_PENDING_INDEX,
  OUTBOX_UNSENT_INDEX,
} from "../engines/dynamodb/outbox-names.js";
import { ENV, RUNTIME } from "./constants.js";
import { streamSourceProps } from "./delivery.js";
import { bundled } from "./function.js";
import type { PipelineOutbox, PipelineParts } from "./pipeline-parts.js";
import type { OutboxSettings } from "./resolve-outbox.js";
import type { ResolvedProps } from "./resolve-props.js";

/**
 * The DynamoDB outbox table's shape, as `DynamoDBOutbox` reads and writes it (its schema module,
 * outbox-schema.ts of the DynamoDB engine): keys, TTL, and the two sparse indexes of its polling reader. The local
 * secondary index can only be made with the table, so the construct makes both though the stream relay uses neither.
 */
export const OUTBOX_TABLE_SCHEMA = {
  partitionKey: OUTBOX_ATTRIBUTES.subject,
  sortKey: OUTBOX_ATTRIBUTES.order,
  ttlAttribute: OUTBOX_ATTRIBUTES.expiresAt,
  unsentIndex: { name: OUTBOX_UNSENT_INDEX, sortKey: OUTBOX_ATTRIBUTES.unsent },
  pendingIndex: {
    name: OUTBOX_PENDING_INDEX,
    partitionKey: OUTBOX_ATTRIBUTES.pendingBucket,
    sortKey: OUTBOX_ATTRIBUTES.createdAtMs,
    include: [OUTBOX_ATTRIBUTES.leaseUntilMs],
  },
} as const;

/**
 * The function puts entries in its commits (TransactWriteItems authorizes each item as its own action: a Put is
 * PutItem). The relay marks each entry sent with an UpdateItem.
 */
export const OUTBOX_WRITER_ACTIONS = ["dynamodb:PutItem"];
export const OUTBOX_RELAY_ACTIONS = ["dynamodb:UpdateItem"];

/**
 * The outbox: the table (stream NEW_IMAGE, TTL, PITR as the state table), the function's right to put entries and
 * its name in OUTBOX_TABLE, and the relay: its own role and log group, the stream mapping with the stream delivery's
 * safe settings, and the right to send to the destinations listed.
 */
export function createOutbox(pipeline: PipelineParts, p: ResolvedProps, o: OutboxSettings): PipelineOutbox {
  const removalPolicy = p.removal === "retain" ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
  const table = outboxTable(pipeline, removalPolicy);
  pipeline.role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: OUTBOX_WRITER_ACTIONS, resources: [table.tableArn] }),
  );
  pipeline.function.addEnvironment(ENV.outboxTable, table.tableName);

  const relayRole = new iam.Role(pipeline, "OutboxRelayRole", {
    assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
    description: `effectively-once pipeline ${p.pipelineName}: the outbox relay's role`,
  });
  const logGroup = new logs.LogGroup(pipeline, "OutboxRelayLogGroup", {
    retention: p.logRetentionDays,
    removalPolicy,
  });
  logGroup.grantWrite(relayRole);
  const relay = relayFunction(pipeline, p, o, relayRole, logGroup, table);
  relayRole.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: OUTBOX_RELAY_ACTIONS, resources: [table.tableArn] }),
  );
  for (const queue of o.queues) queue.grantSendMessages(relayRole);
  for (const topic of o.topics) topic.grantPublish(relayRole);
  for (const bus of o.eventBuses) bus.grantPutEventsTo(relayRole);

  // A stream mapping's on-failure destination is a standard queue: a FIFO pipeline's DLQ cannot be it.
  const relayDeadLetterQueue = pipeline.deadLetterQueue.fifo
    ? new sqs.Queue(pipeline, "OutboxRelayDeadLetterQueue", {
        retentionPeriod: Duration.days(14),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      })
    : pipeline.deadLetterQueue;
  relay.addEventSource(
    new sources.DynamoEventSource(
      table,
      streamSourceProps(
        {
          batchSize: o.batchSize,
          maxBatchingWindowSeconds: 0,
          // One batch per shard at a time: a subject's entries are sent in commit order.
          parallelizationFactor: 1,
          retryAttempts: o.retryAttempts,
          maxRecordAgeSeconds: o.maxRecordAgeSeconds,
        },
        relayDeadLetterQueue,
      ),
    ),
  );
  return { table, relay, relayRole, relayDeadLetterQueue };
}

function outboxTable(pipeline: PipelineParts, removalPolicy: RemovalPolicy): dynamodb.Table {
  const s = OUTBOX_TABLE_SCHEMA;
  const string = (name: string) => ({ name, type: dynamodb.AttributeType.STRING });
  const table = new dynamodb.Table(pipeline, "OutboxTable", {
    partitionKey: string(s.partitionKey),
    sortKey: string(s.sortKey),
    stream: dynamodb.StreamViewType.NEW_IMAGE,
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    timeToLiveAttribute: s.ttlAttribute,
    // Unsent entries are messages the commits promised: losing them loses the messages.
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    removalPolicy,
  });
  table.addLocalSecondaryIndex({ indexName: s.unsentIndex.name, sortKey: string(s.unsentIndex.sortKey) });
  table.addGlobalSecondaryIndex({
    indexName: s.pendingIndex.name,
    partitionKey: string(s.pendingIndex.partitionKey),
    sortKey: { name: s.pendingIndex.sortKey, type: dynamodb.AttributeType.NUMBER },
    projectionType: dynamodb.ProjectionType.INCLUDE,
    nonKeyAttributes: [...s.pendingIndex.include],
  });
  return table;
}

function relayFunction(
  pipeline: PipelineParts,
  p: ResolvedProps,
  o: OutboxSettings,
  role: iam.Role,
  logGroup: logs.LogGroup,
  table: dynamodb.Table,
): lambda.Function {
  const common = {
    runtime: RUNTIME,
    architecture: p.architecture === "arm64" ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
    timeout: Duration.seconds(o.relayTimeoutSeconds),
    memorySize: 256,
    role,
    logGroup,
    environment: { [ENV.outboxTable]: table.tableName, NODE_OPTIONS: "--enable-source-maps" },
    description: `effectively-once pipeline ${p.pipelineName}: the outbox relay`,
  };
  const relay = o.relay;
  if (relay.kind === "prebuilt") {
    return new nodejs.NodejsFunction(pipeline, "OutboxRelay", {
      ...common,
      code: relay.code,
      handler: relay.handler,
    });
  }
  const projectRoot = p.source.kind === "bundle" ? p.source.projectRoot : undefined;
  return new nodejs.NodejsFunction(pipeline, "OutboxRelay", {
    ...common,
    ...bundled(
      { kind: "bundle", entry: relay.entry, handler: relay.handler, projectRoot, nativeModules: [] },
      p,
    ),
  });
}
