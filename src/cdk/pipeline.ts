import { Duration, RemovalPolicy, Tags } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kinesis from "aws-cdk-lib/aws-kinesis";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as s3n from "aws-cdk-lib/aws-s3-notifications";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { createAlarms } from "./alarms.js";
import { ENV, STATE_KEY_ATTRIBUTE, STATE_TABLE_ACTIONS, TTL_ATTRIBUTE } from "./constants.js";
import { createDashboard } from "./dashboard.js";
import {
  configureAsyncInvoke,
  dynamoDBStreamSource,
  kinesisSource,
  notify,
  objectEventsRule,
  sourceQueue,
} from "./delivery.js";
import { createFunction } from "./function.js";
import { PIPELINE_DIMENSION, type PipelineMetric, SERVICE_DIMENSION } from "./metrics.js";
import { acknowledgeNagFindings } from "./nag.js";
import { createOutbox } from "./outbox.js";
import type { PipelineAlarms } from "./pipeline-alarms.js";
import type { PipelineOutbox, PipelineParts } from "./pipeline-parts.js";
import type { EffectivelyOncePipelineProps } from "./props.js";
import { createQueries } from "./queries.js";
import { type ResolvedProps, resolveProps } from "./resolve-props.js";
import { INLINE_STATE_ACTIONS } from "./resolve-state.js";
import { ROLE_TAG, SOURCE_TABLE_ROLE } from "./state-kinds.js";

/**
 * One effectively-once pipeline on AWS: the source (bucket and/or queue), the function, the state table,
 * optional sinks, the dead-letter queue, alarms and a dashboard, with the safe settings as defaults.
 */
export class EffectivelyOncePipeline extends Construct implements PipelineParts {
  readonly pipelineName: string;
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  /** The guard's state table; absent when the state is inline or external (the `state` prop). */
  readonly stateTable?: dynamodb.Table;
  readonly recordsTable?: dynamodb.Table;
  readonly inputBucket?: s3.Bucket;
  readonly outputBucket?: s3.Bucket;
  /** The source queue (`s3-sqs`, `sqs`). */
  readonly queue?: sqs.Queue;
  /** The Kinesis stream the function reads (`kinesis`): created, or the `kinesisStream` prop. */
  readonly stream?: kinesis.IStream;
  /** The table whose stream the function reads (`dynamodb-streams`): created, or the `sourceTable` prop. */
  readonly sourceTable?: dynamodb.ITable;
  /** Dead letters: the source queue's redrive target, or the on-failure destination of async invokes and streams. */
  readonly deadLetterQueue: sqs.Queue;
  /** The EventBridge rule (`s3-eventbridge`). */
  readonly rule?: events.Rule;
  readonly alarms: PipelineAlarms;
  /** The outbox (the `outbox` prop): its table, the relay function on its stream, the relay's role and DLQ. */
  readonly outbox?: PipelineOutbox;
  readonly dashboard?: cloudwatch.Dashboard;
  /** Saved Logs Insights queries (CloudWatch console → Logs Insights → Saved queries). */
  readonly queries: logs.QueryDefinition[];
  readonly timeoutSeconds: number;
  /** The source queue's visibility timeout, when there is a queue. */
  readonly visibilityTimeoutSeconds?: number;

  readonly #props: ResolvedProps;
  readonly #dimensions: Record<string, string>;
  readonly #removalPolicy: RemovalPolicy;

  constructor(scope: Construct, id: string, props: EffectivelyOncePipelineProps) {
    super(scope, id);
    const p = resolveProps(props);
    this.#props = p;
    this.pipelineName = p.pipelineName;
    this.timeoutSeconds = p.timeoutSeconds;
    this.visibilityTimeoutSeconds = p.queue?.visibilityTimeoutSeconds;
    this.#removalPolicy = p.removal === "retain" ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const serviceName = p.environment[ENV.serviceName] ?? p.pipelineName;
    this.#dimensions = { [PIPELINE_DIMENSION]: p.pipelineName, [SERVICE_DIMENSION]: serviceName };

    // Dead letters: redrive target of the source queue, or the on-failure destination of async invokes and of the
    // stream mappings (for a stream: the failed batch's shard and sequence numbers, not the records).
    this.deadLetterQueue = new sqs.Queue(this, "DeadLetterQueue", {
      fifo: p.queue?.fifo || undefined,
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });

    // State: one item per subject, expired by TTL; PITR because losing it re-runs every event.
    if (p.state.kind === "table") this.stateTable = this.#table("StateTable", TTL_ATTRIBUTE);
    if (p.recordsTable)
      this.recordsTable = this.#table("RecordsTable", undefined, p.recordsTable.keyAttribute);
    if (p.s3) this.inputBucket = this.#bucket("InputBucket", p.delivery === "s3-eventbridge");
    if (p.outputBucket) this.outputBucket = this.#bucket("OutputBucket");
    if (p.kinesis) this.stream = p.kinesis.stream ?? this.#stream(p.kinesis.shardCount);
    if (p.dynamodb) this.sourceTable = p.dynamodb.table ?? this.#sourceTable(p.dynamodb.viewType);

    // The function: its own role (no managed policies) and log group (retention, removal policy).
    this.logGroup = new logs.LogGroup(this, "LogGroup", {
      retention: p.logRetentionDays,
      removalPolicy: this.#removalPolicy,
    });
    this.role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `effectively-once pipeline ${p.pipelineName}: the function's role`,
    });
    this.logGroup.grantWrite(this.role);
    this.function = createFunction(this, p, serviceName);
    this.#grant(p);
    if (p.outbox) this.outbox = createOutbox(this, p, p.outbox);

    ({ queue: this.queue, rule: this.rule } = this.#connectSource(p));

    this.alarms = createAlarms(this, p);
    this.queries = createQueries(this);
    if (p.dashboard) this.dashboard = createDashboard(this, p);
    acknowledgeNagFindings(this, p);
  }

  /** How events reach the function: the source queue or the EventBridge rule, when the delivery has one. */
  #connectSource(p: ResolvedProps): { queue?: sqs.Queue; rule?: events.Rule } {
    switch (p.delivery) {
      case "s3-direct":
        configureAsyncInvoke(this);
        notify(this.#inputBucket(), p.s3, new s3n.LambdaDestination(this.function));
        return {};
      case "s3-eventbridge":
        configureAsyncInvoke(this);
        return { rule: objectEventsRule(this, this.#inputBucket(), p.s3) };
      case "s3-sqs": {
        const queue = sourceQueue(this, p.queue);
        notify(this.#inputBucket(), p.s3, new s3n.SqsDestination(queue));
        return { queue };
      }
      case "sqs":
        return { queue: sourceQueue(this, p.queue) };
      case "kinesis":
        kinesisSource(this, required(this.stream, "Kinesis stream"), p.kinesis);
        return {};
      case "dynamodb-streams":
        dynamoDBStreamSource(this, required(this.sourceTable, "source table"), p.dynamodb);
        return {};
    }
  }

  /** A pipeline metric (what the adapters emit), with this pipeline's dimensions. Default: Sum over 5 minutes. */
  metric(name: PipelineMetric, props: cloudwatch.MetricOptions = {}): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.#props.metricsNamespace,
      metricName: name,
      dimensionsMap: this.#dimensions,
      statistic: "Sum",
      period: Duration.minutes(5),
      ...props,
    });
  }

  /** Least privilege: the actions the store, the sinks and the adapters call, on these resources only. */
  #grant(p: ResolvedProps): void {
    this.stateTable?.grant(this.role, ...STATE_TABLE_ACTIONS);
    // Inline state in the records table: its actions are among p.recordsTable.actions (resolve-state.ts).
    if (this.recordsTable && p.recordsTable) this.recordsTable.grant(this.role, ...p.recordsTable.actions);
    if (p.state.kind === "inline" && p.state.table) {
      // The table's ARN only: the inline store never reads an index (Table.grant would add index/* ARNs).
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: [...INLINE_STATE_ACTIONS], resources: [p.state.table.tableArn] }),
      );
    }
    if (this.inputBucket && p.s3?.inputBucketRead) {
      this.#grantObjects(this.inputBucket, ["s3:GetObject"], p.s3.objectKeyPrefix);
    }
    if (this.outputBucket) {
      this.#grantObjects(
        this.outputBucket,
        p.outputBucketRead ? ["s3:GetObject", "s3:PutObject"] : ["s3:PutObject"],
      );
    }
  }

  #grantObjects(bucket: s3.Bucket, actions: string[], prefix = ""): void {
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions, resources: [bucket.arnForObjects(`${prefix}*`)] }),
    );
  }

  /** The S3 deliveries' bucket (created before the function, which names it in its environment). */
  #inputBucket(): s3.Bucket {
    return required(this.inputBucket, "input bucket");
  }

  /**
   * The `kinesis` delivery's stream: on demand (no shard count to plan) unless shardCount is given, encrypted with the
   * aws/kinesis key, kept 7 days: the DLQ message of a failed batch names its records, so they must outlive
   * maxRecordAge and a weekend.
   */
  #stream(shardCount: number | undefined): kinesis.Stream {
    return new kinesis.Stream(this, "Stream", {
      streamMode: shardCount === undefined ? kinesis.StreamMode.ON_DEMAND : kinesis.StreamMode.PROVISIONED,
      shardCount,
      encryption: kinesis.StreamEncryption.MANAGED,
      retentionPeriod: Duration.days(7),
      removalPolicy: this.#removalPolicy,
    });
  }

  /** The `dynamodb-streams` delivery's table: keyed like the records table, with its stream; tagged as a source. */
  #sourceTable(viewType: keyof typeof dynamodb.StreamViewType): dynamodb.Table {
    const table = this.#table("SourceTable", undefined, "pk", dynamodb.StreamViewType[viewType]);
    // Keyed by pk like a state table: the tag tells `eonce audit template` it is not one.
    Tags.of(table).add(ROLE_TAG, SOURCE_TABLE_ROLE);
    return table;
  }

  #table(
    id: string,
    ttl?: string,
    key = STATE_KEY_ATTRIBUTE,
    stream?: dynamodb.StreamViewType,
  ): dynamodb.Table {
    return new dynamodb.Table(this, id, {
      partitionKey: { name: key, type: dynamodb.AttributeType.STRING },
      stream,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: ttl,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      // A retained table is state worth keeping: also refuse a DeleteTable outside CloudFormation.
      deletionProtection: this.#removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy: this.#removalPolicy,
    });
  }

  #bucket(id: string, eventBridge = false): s3.Bucket {
    const p = this.#props;
    return new s3.Bucket(this, id, {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      eventBridgeEnabled: eventBridge || undefined,
      serverAccessLogsBucket: p.accessLogsBucket,
      serverAccessLogsPrefix: p.accessLogsBucket ? `${p.pipelineName}/${id}/` : undefined,
      removalPolicy: this.#removalPolicy,
      autoDeleteObjects: this.#removalPolicy === RemovalPolicy.DESTROY,
    });
  }
}

/** A resource the construct made (or was given) before it is wired (resolveProps guarantees it). */
function required<T>(resource: T | undefined, what: string): T {
  if (resource === undefined) throw new Error(`EffectivelyOncePipeline: the ${what} is missing`);
  return resource;
}
