import { existsSync } from "node:fs";
import * as path from "node:path";
import { Duration, RemovalPolicy, Stack, Token, Validations } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as s3n from "aws-cdk-lib/aws-s3-notifications";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "../stores/dynamodb/schema-names.js";
import {
  HANDLER_DURATION_METRIC,
  PIPELINE_DIMENSION,
  type PipelineMetric,
  RECEIVE_COUNT_METRIC,
  SERVICE_DIMENSION,
} from "./metrics.js";
import { copyCommands, nativeModuleDirs } from "./native-modules.js";
import { type EffectivelyOncePipelineProps, type ResolvedProps, resolveProps } from "./props.js";

/** The state table's names: the store's own (a module with no imports, so no SDK is loaded). */
export { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE };

/** Environment variables the construct sets on the function (the reference handlers read these). */
export const ENV = {
  stateTable: "STATE_TABLE",
  outputBucket: "OUTPUT_BUCKET",
  inputBucket: "INPUT_BUCKET",
  /** The pipeline's name, for the handler's `pipeline` option (the metric dimension). */
  pipeline: "EONCE_PIPELINE",
  serviceName: "POWERTOOLS_SERVICE_NAME",
  metricsNamespace: "POWERTOOLS_METRICS_NAMESPACE",
} as const;

/** The Node.js runtime: the newest Lambda offers (cdk-nag AwsSolutions-L1 asks for the latest). */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;
const ESBUILD_TARGET = "node24";

/**
 * SQS actions of the function on its source queue: the event source mapping's poll (Receive, Delete,
 * GetQueueAttributes) and the adapter's visibility heartbeat (ChangeMessageVisibility).
 */
export const QUEUE_CONSUMER_ACTIONS = [
  "sqs:ReceiveMessage",
  "sqs:DeleteMessage",
  "sqs:GetQueueAttributes",
  "sqs:ChangeMessageVisibility",
];
/**
 * The DynamoDB store calls UpdateItem (claim, renew, commit, release), GetItem (fallback read) and
 * TransactWriteItems (commit with effects). IAM has no TransactWriteItems action: each item of a
 * transaction is authorized as its own PutItem/UpdateItem, so the state table needs these two only.
 */
export const STATE_TABLE_ACTIONS = ["dynamodb:GetItem", "dynamodb:UpdateItem"];

/**
 * Logs Insights queries on the adapters' log lines (src/observe/observer.ts): one JSON object per line,
 * `status` is the delivery's outcome, `correlation_id` the delivery's id.
 */
export const LOG_QUERIES = {
  skipped: {
    fields: ["@timestamp", "status", "subject", "position", "current", "correlation_id", "message"],
    filter: 'status in ["duplicate", "stale"]',
    sort: "@timestamp desc",
    limit: 200,
  },
  outcomes: {
    filter: "ispresent(status)",
    stats: "count(*) as deliveries by status, bin(5m)",
  },
  problems: {
    fields: ["@timestamp", "level", "status", "subject", "correlation_id", "message", "error.message"],
    filter:
      'status in ["failed", "unconfirmed", "lease-lost", "busy", "in-flight", "malformed"] or level = "ERROR"',
    sort: "@timestamp desc",
    limit: 200,
  },
} as const;

export interface PipelineAlarms {
  /** Messages in the dead-letter queue: deliveries that exhausted their retries. */
  readonly deadLetters: cloudwatch.Alarm;
  /** A run finished after its claim was taken over (lease too short for the handler?). */
  readonly leaseLost: cloudwatch.Alarm;
  /** Deliveries that failed (they are retried, then dead-lettered). */
  readonly failed: cloudwatch.Alarm;
  /** Invocations that failed as a whole (timeout, crash outside the per-record guard). */
  readonly functionErrors: cloudwatch.Alarm;
}

/**
 * One effectively-once pipeline on AWS: the source (bucket and/or queue), the function, the state table,
 * optional sinks, the dead-letter queue, alarms and a dashboard, with the safe settings as defaults.
 */
export class EffectivelyOncePipeline extends Construct {
  readonly pipelineName: string;
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly stateTable: dynamodb.Table;
  readonly recordsTable?: dynamodb.Table;
  readonly inputBucket?: s3.Bucket;
  readonly outputBucket?: s3.Bucket;
  /** The source queue (`s3-sqs`, `sqs`). */
  readonly queue?: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  /** The EventBridge rule (`s3-eventbridge`). */
  readonly rule?: events.Rule;
  readonly alarms: PipelineAlarms;
  readonly dashboard?: cloudwatch.Dashboard;
  /** Saved Logs Insights queries (CloudWatch console → Logs Insights → Saved queries). */
  readonly queries: logs.QueryDefinition[];
  readonly timeoutSeconds: number;
  /** The source queue's visibility timeout, when there is a queue. */
  readonly visibilityTimeoutSeconds?: number;

  readonly #props: ResolvedProps;
  readonly #dimensions: Record<string, string>;

  constructor(scope: Construct, id: string, props: EffectivelyOncePipelineProps) {
    super(scope, id);
    const p = resolveProps(props);
    this.#props = p;
    this.pipelineName = p.pipelineName;
    this.timeoutSeconds = p.timeoutSeconds;
    this.visibilityTimeoutSeconds = p.visibilityTimeoutSeconds;
    const removalPolicy = p.removal === "retain" ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const serviceName = p.environment[ENV.serviceName] ?? p.pipelineName;
    this.#dimensions = { [PIPELINE_DIMENSION]: p.pipelineName, [SERVICE_DIMENSION]: serviceName };

    // Dead letters: redrive target of the source queue, or the on-failure destination of async invokes.
    this.deadLetterQueue = new sqs.Queue(this, "DeadLetterQueue", {
      fifo: p.fifo || undefined,
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });

    // State: one item per subject, expired by TTL; PITR because losing it re-runs every event.
    this.stateTable = this.#table("StateTable", removalPolicy, TTL_ATTRIBUTE);
    if (p.recordsTable) {
      this.recordsTable = this.#table("RecordsTable", removalPolicy, undefined, p.recordsTable.keyAttribute);
    }

    if (p.delivery !== "sqs") this.inputBucket = this.#bucket("InputBucket", removalPolicy, p.delivery);
    if (p.outputBucket) this.outputBucket = this.#bucket("OutputBucket", removalPolicy);

    // The function: its own role (no managed policies) and log group (retention, removal policy).
    this.logGroup = new logs.LogGroup(this, "LogGroup", {
      retention: p.logRetentionDays as logs.RetentionDays,
      removalPolicy,
    });
    this.role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `effectively-once pipeline ${p.pipelineName}: the function's role`,
    });
    this.logGroup.grantWrite(this.role);
    this.function = this.#function(p, serviceName);

    // Least privilege: the actions the store, the sinks and the adapters call, on these resources only.
    this.stateTable.grant(this.role, ...STATE_TABLE_ACTIONS);
    if (this.recordsTable && p.recordsTable) this.recordsTable.grant(this.role, ...p.recordsTable.actions);
    if (this.inputBucket && p.inputBucketRead) {
      this.#grantObjects(this.inputBucket, ["s3:GetObject"], p.objectKeyPrefix);
    }
    if (this.outputBucket) {
      this.#grantObjects(
        this.outputBucket,
        p.outputBucketRead ? ["s3:GetObject", "s3:PutObject"] : ["s3:PutObject"],
      );
    }

    switch (p.delivery) {
      case "s3-direct":
        this.#asyncInvokeConfig();
        this.#notify(new s3n.LambdaDestination(this.function));
        break;
      case "s3-eventbridge":
        this.#asyncInvokeConfig();
        this.rule = this.#rule();
        break;
      case "s3-sqs":
      case "sqs":
        this.queue = this.#sourceQueue(p);
        if (p.delivery === "s3-sqs") this.#notify(new s3n.SqsDestination(this.queue));
        break;
    }

    this.alarms = this.#alarms();
    this.queries = this.#queries();
    if (p.dashboard) this.dashboard = this.#dashboard();
    this.#acknowledgeNagFindings();
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

  #table(id: string, removalPolicy: RemovalPolicy, ttl?: string, key = STATE_KEY_ATTRIBUTE): dynamodb.Table {
    return new dynamodb.Table(this, id, {
      partitionKey: { name: key, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: ttl,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      // A retained table is state worth keeping: also refuse a DeleteTable outside CloudFormation.
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy,
    });
  }

  #bucket(id: string, removalPolicy: RemovalPolicy, delivery?: string): s3.Bucket {
    const p = this.#props;
    return new s3.Bucket(this, id, {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      eventBridgeEnabled: delivery === "s3-eventbridge" || undefined,
      serverAccessLogsBucket: p.accessLogsBucket,
      serverAccessLogsPrefix: p.accessLogsBucket ? `${p.pipelineName}/${id}/` : undefined,
      removalPolicy,
      autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY,
    });
  }

  #function(p: ResolvedProps, serviceName: string): lambda.Function {
    const environment: Record<string, string> = {
      [ENV.stateTable]: this.stateTable.tableName,
      [ENV.pipeline]: p.pipelineName,
      [ENV.serviceName]: serviceName,
      [ENV.metricsNamespace]: p.metricsNamespace,
      NODE_OPTIONS: "--enable-source-maps",
    };
    if (this.recordsTable && p.recordsTable) {
      environment[p.recordsTable.environmentVariable] = this.recordsTable.tableName;
    }
    if (this.outputBucket) environment[ENV.outputBucket] = this.outputBucket.bucketName;
    if (this.inputBucket) environment[ENV.inputBucket] = this.inputBucket.bucketName;
    Object.assign(environment, p.environment);

    const common = {
      runtime: RUNTIME,
      architecture: p.architecture === "arm64" ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
      timeout: Duration.seconds(p.timeoutSeconds),
      memorySize: p.memoryMiB,
      role: this.role,
      logGroup: this.logGroup,
      environment,
      description: `effectively-once pipeline ${p.pipelineName} (${p.delivery})`,
    };
    if (p.code) {
      return new nodejs.NodejsFunction(this, "Function", { ...common, code: p.code, handler: p.handler });
    }
    const entry = path.resolve(p.entry as string);
    const depsLockFilePath = findLockFile(p.projectRoot ?? path.dirname(entry));
    const projectRoot = path.dirname(depsLockFilePath);
    const nativeDirs = nativeModuleDirs(projectRoot, p.nativeModules, p.architecture);
    return new nodejs.NodejsFunction(this, "Function", {
      ...common,
      entry,
      handler: p.handler ?? "handler",
      projectRoot,
      depsLockFilePath,
      bundling: {
        // The local esbuild, never Docker: synth must work on machines without a container engine.
        forceDockerBundling: false,
        format: nodejs.OutputFormat.ESM,
        target: ESBUILD_TARGET,
        mainFields: ["module", "main"],
        minify: true,
        sourceMap: true,
        // Bundle the SDK rather than use the runtime's: the store depends on its exact error shapes
        // (ConditionalCheckFailedException.Item, CancellationReasons), tested with the pinned version.
        bundleAwsSDK: true,
        externalModules: p.nativeModules,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (_input: string, output: string) => copyCommands(projectRoot, nativeDirs, output),
        },
        // CommonJS dependencies bundled into an ES module still call require() for Node built-ins.
        banner:
          "import { createRequire as __eonceCreateRequire } from 'node:module'; " +
          "const require = __eonceCreateRequire(import.meta.url);",
      },
    });
  }

  #grantObjects(bucket: s3.Bucket, actions: string[], prefix = ""): void {
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions, resources: [bucket.arnForObjects(`${prefix}*`)] }),
    );
  }

  /** Async invokes (S3, EventBridge): Lambda retries twice, then the event goes to the DLQ, never lost. */
  #asyncInvokeConfig(): void {
    const dlq = this.deadLetterQueue;
    // A destination granting only SendMessage (the stock SqsDestination also grants GetQueueAttributes/Url).
    const onFailure: lambda.IDestination = {
      bind: (_scope, fn) => {
        dlq.grant(fn, "sqs:SendMessage");
        return { destination: dlq.queueArn };
      },
    };
    this.function.configureAsyncInvoke({ retryAttempts: 2, maxEventAge: Duration.hours(6), onFailure });
  }

  #notify(destination: s3.IBucketNotificationDestination): void {
    const p = this.#props;
    const bucket = this.inputBucket as s3.Bucket;
    const filter: s3.NotificationKeyFilter = { prefix: p.objectKeyPrefix, suffix: p.objectKeySuffix };
    const filters = p.objectKeyPrefix || p.objectKeySuffix ? [filter] : [];
    bucket.addEventNotification(s3.EventType.OBJECT_CREATED, destination, ...filters);
    if (p.includeRemovals) bucket.addEventNotification(s3.EventType.OBJECT_REMOVED, destination, ...filters);
  }

  #rule(): events.Rule {
    const p = this.#props;
    const bucket = this.inputBucket as s3.Bucket;
    const object: Record<string, unknown> = {};
    const key = keyMatcher(p.objectKeyPrefix, p.objectKeySuffix);
    if (key) object.key = key;
    const rule = new events.Rule(this, "Rule", {
      description: `effectively-once pipeline ${p.pipelineName}: object events of the input bucket`,
      eventPattern: {
        source: ["aws.s3"],
        detailType: p.includeRemovals ? ["Object Created", "Object Deleted"] : ["Object Created"],
        detail: { bucket: { name: [bucket.bucketName] }, ...(key ? { object } : {}) },
      },
    });
    // Events EventBridge cannot hand to Lambda (throttled for 24 h, permission lost) go to the DLQ too.
    rule.addTarget(
      new targets.LambdaFunction(this.function, {
        deadLetterQueue: this.deadLetterQueue,
        retryAttempts: 185,
        maxEventAge: Duration.hours(24),
      }),
    );
    return rule;
  }

  #sourceQueue(p: ResolvedProps): sqs.Queue {
    const queue = new sqs.Queue(this, "Queue", {
      fifo: p.fifo || undefined,
      visibilityTimeout: Duration.seconds(p.visibilityTimeoutSeconds as number),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: p.maxReceiveCount },
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    queue.grant(this.role, ...QUEUE_CONSUMER_ACTIONS);
    this.function.addEventSourceMapping("QueueSource", {
      eventSourceArn: queue.queueArn,
      batchSize: p.batchSize,
      maxBatchingWindow: p.maxBatchingWindowSeconds
        ? Duration.seconds(p.maxBatchingWindowSeconds)
        : undefined,
      maxConcurrency: p.maxConcurrency,
      // The adapters fail single records, not the batch: the others are not redelivered.
      reportBatchItemFailures: true,
    });
    return queue;
  }

  #alarms(): PipelineAlarms {
    const p = this.#props;
    const make = (id: string, description: string, metric: cloudwatch.IMetric, threshold: number) => {
      const alarm = new cloudwatch.Alarm(this, id, {
        alarmDescription: `effectively-once pipeline ${p.pipelineName}: ${description}`,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      for (const action of p.alarmActions) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
      return alarm;
    };
    return {
      deadLetters: make(
        "DeadLettersAlarm",
        "deliveries in the dead-letter queue; inspect them, fix the cause, then redrive",
        this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: "Maximum",
        }),
        1,
      ),
      leaseLost: make(
        "LeaseLostAlarm",
        "a run lost its claim before committing (handler slower than the lease, or frozen)",
        this.metric("leaseLost"),
        1,
      ),
      failed: make(
        "FailedAlarm",
        "deliveries failed; they are retried, then dead-lettered",
        this.metric("failed"),
        p.failedAlarmThreshold,
      ),
      functionErrors: make(
        "FunctionErrorsAlarm",
        "invocations failed as a whole (timeout or crash)",
        this.function.metricErrors({ period: Duration.minutes(5), statistic: "Sum" }),
        1,
      ),
    };
  }

  #queries(): logs.QueryDefinition[] {
    const name = (what: string) => `effectively-once/${this.#props.pipelineName}/${what}`;
    return [
      new logs.QueryDefinition(this, "SkippedQuery", {
        queryDefinitionName: name("duplicate-and-stale"),
        queryString: new logs.QueryString({
          fields: [...LOG_QUERIES.skipped.fields],
          filterStatements: [LOG_QUERIES.skipped.filter],
          sort: LOG_QUERIES.skipped.sort,
          limit: LOG_QUERIES.skipped.limit,
        }),
        logGroups: [this.logGroup],
      }),
      new logs.QueryDefinition(this, "OutcomesQuery", {
        queryDefinitionName: name("outcomes"),
        queryString: new logs.QueryString({
          filterStatements: [LOG_QUERIES.outcomes.filter],
          statsStatements: [LOG_QUERIES.outcomes.stats],
        }),
        logGroups: [this.logGroup],
      }),
      new logs.QueryDefinition(this, "ProblemsQuery", {
        queryDefinitionName: name("problems"),
        queryString: new logs.QueryString({
          fields: [...LOG_QUERIES.problems.fields],
          filterStatements: [LOG_QUERIES.problems.filter],
          sort: LOG_QUERIES.problems.sort,
          limit: LOG_QUERIES.problems.limit,
        }),
        logGroups: [this.logGroup],
      }),
    ];
  }

  #dashboard(): cloudwatch.Dashboard {
    const p = this.#props;
    const stackName = Stack.of(this).stackName;
    const dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      dashboardName: Token.isUnresolved(stackName)
        ? undefined
        : `${stackName}-${p.pipelineName}`.slice(0, 255),
      defaultInterval: Duration.hours(3),
    });
    const sums = (names: PipelineMetric[]) => names.map((n) => this.metric(n, { label: n }));
    const queueMetrics: cloudwatch.IMetric[] = [
      this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        label: "dead letters",
        statistic: "Maximum",
      }),
    ];
    if (this.queue) {
      queueMetrics.push(
        this.queue.metricApproximateNumberOfMessagesVisible({ label: "waiting", statistic: "Maximum" }),
        this.queue.metricApproximateNumberOfMessagesNotVisible({ label: "in flight", statistic: "Maximum" }),
      );
    }
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown:
          `## effectively-once: ${p.pipelineName} (${p.delivery})\n` +
          "Every delivery ends as one of: **processed** (the handler ran, committed once), **duplicate** " +
          "(already done: acknowledged), **stale** (a newer event of the subject won: skipped), " +
          "**failed** (retried, then dead-lettered). Log lines carry `outcome` and `correlationId`.",
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Deliveries (sum / 5 min)",
        left: sums(["processed", "duplicate", "stale", "superseded"]),
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: "Needs attention (sum / 5 min)",
        left: sums(["failed", "unconfirmed", "leaseLost", "busy", "inFlight", "tookOver", "malformed"]),
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Receive count (redeliveries)",
        left: [
          this.metric(RECEIVE_COUNT_METRIC, { statistic: "Maximum", label: "max" }),
          this.metric(RECEIVE_COUNT_METRIC, { statistic: "Average", label: "avg" }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: "Handler duration (ms)",
        left: [
          this.metric(HANDLER_DURATION_METRIC, { statistic: "p50", label: "p50" }),
          this.metric(HANDLER_DURATION_METRIC, { statistic: "p99", label: "p99" }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({ title: "Queues", left: queueMetrics, width: 8 }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Function",
        left: [
          this.function.metricInvocations({ statistic: "Sum" }),
          this.function.metricErrors({ statistic: "Sum" }),
          this.function.metricThrottles({ statistic: "Sum" }),
        ],
        right: [this.function.metricDuration({ statistic: "p99", label: "duration p99" })],
        width: 12,
      }),
      new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: Object.values(this.alarms), width: 12 }),
    );
    dashboard.addWidgets(
      new cloudwatch.LogQueryWidget({
        title: "Latest duplicate and stale deliveries",
        logGroupNames: [this.logGroup.logGroupName],
        queryLines: [
          `fields ${LOG_QUERIES.skipped.fields.join(", ")}`,
          `filter ${LOG_QUERIES.skipped.filter}`,
          `sort ${LOG_QUERIES.skipped.sort}`,
          "limit 50",
        ],
        width: 24,
        height: 6,
      }),
    );
    return dashboard;
  }

  /**
   * cdk-nag (AwsSolutions) findings this construct accepts on purpose, each with its reason. Recorded with
   * CDK's own `Validations.acknowledge`, so the construct needs no cdk-nag import.
   */
  #acknowledgeNagFindings(): void {
    const stack = Stack.of(this);
    const id = (c: Construct) => stack.resolve((c.node.defaultChild as s3.CfnBucket).logicalId) as string;
    for (const bucket of [this.inputBucket, this.outputBucket]) {
      if (!bucket) continue;
      if (!this.#props.accessLogsBucket) {
        Validations.of(bucket).acknowledge({
          id: "AwsSolutions-S1",
          reason:
            "Server access logs are opt-in (accessLogsBucket): every object the pipeline touches is already " +
            "in the function's structured logs, and CloudTrail data events are the audit trail of choice.",
        });
      }
    }
    const policy = this.role.node.tryFindChild("DefaultPolicy");
    if (policy) {
      const objectArns: string[] = [];
      if (this.inputBucket && this.#props.inputBucketRead) {
        objectArns.push(`<${id(this.inputBucket)}.Arn>/${this.#props.objectKeyPrefix ?? ""}*`);
      }
      if (this.outputBucket) objectArns.push(`<${id(this.outputBucket)}.Arn>/*`);
      for (const arn of objectArns) {
        Validations.of(policy).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${arn}]`,
          reason:
            "Object-level actions on the pipeline's own bucket: the keys are only known at run time " +
            "(the object in the event, the derived output key). No bucket-level or other bucket's access.",
        });
      }
    }
    const dlqReason = "This queue is the dead-letter queue itself: dead letters stay here until redriven.";
    if (this.#props.delivery === "s3-direct" || this.#props.delivery === "s3-eventbridge") {
      // cdk-nag recognizes a DLQ only by another queue's redrive policy, not as an on-failure destination.
      Validations.of(this.deadLetterQueue).acknowledge({ id: "AwsSolutions-SQS3", reason: dlqReason });
    }
    // The Serverless pack, for users who run it too.
    Validations.of(this.deadLetterQueue).acknowledge({
      id: "Serverless-SQSRedrivePolicy",
      reason: dlqReason,
    });
    Validations.of(this.function).acknowledge(
      {
        id: "Serverless-LambdaDLQ",
        reason:
          "Failed async invokes go to the DLQ through an on-failure destination (it keeps the error and the " +
          "request context, a function DLQ does not); queued deliveries dead-letter by the queue's redrive policy.",
      },
      {
        id: "Serverless-LambdaTracing",
        reason:
          "X-Ray is off by default (it is billed per trace); every log line carries the delivery's " +
          "correlation id, which links a delivery's steps.",
      },
    );
    if (this.queue) {
      Validations.of(this.function).acknowledge({
        id: "Serverless-LambdaEventSourceMappingDestination",
        reason:
          "An SQS source dead-letters by its redrive policy (maxReceiveCount); event source mapping " +
          "on-failure destinations are for stream and Kafka sources.",
      });
    }
    acknowledgeCdkSingletons(stack);
  }
}

/**
 * Findings on resources CDK itself adds to the stack (the S3 notifications handler and the auto-delete
 * provider): their code and policies are CDK's, not configurable here.
 */
function acknowledgeCdkSingletons(stack: Stack): void {
  const notifications = stack.node.tryFindChild("BucketNotificationsHandler050a0587b7544547bf325f094a3db834");
  if (notifications) {
    Validations.of(notifications).acknowledge({
      id: "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
      reason:
        "CDK's singleton custom resource that writes bucket notification configurations: its role and " +
        "managed policy are set by aws-cdk-lib, not configurable here.",
    });
  }
}

/** An EventBridge matcher for the object key; prefix and suffix together need a wildcard. */
function keyMatcher(prefix?: string, suffix?: string): string[] | undefined {
  if (prefix && suffix) {
    const escapeWildcard = (s: string) => s.replace(/[\\*]/g, "\\$&");
    return events.Match.wildcard(`${escapeWildcard(prefix)}*${escapeWildcard(suffix)}`);
  }
  if (prefix) return events.Match.prefix(prefix);
  if (suffix) return events.Match.suffix(suffix);
  return undefined;
}

/** The nearest package-lock.json from `dir` upwards: esbuild resolves the handler's imports from there. */
function findLockFile(dir: string): string {
  let current = path.resolve(dir);
  for (;;) {
    const candidate = path.join(current, "package-lock.json");
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(current);
    if (parent === current) {
      throw new Error(`EffectivelyOncePipeline: no package-lock.json above ${dir}; set projectRoot`);
    }
    current = parent;
  }
}
