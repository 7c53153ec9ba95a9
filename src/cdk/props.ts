import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as events from "aws-cdk-lib/aws-events";
import type * as kinesis from "aws-cdk-lib/aws-kinesis";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";

/**
 * How events reach the function:
 * - `s3-direct`: S3 notifications invoke the function asynchronously (Lambda retries twice, then the DLQ);
 * - `s3-eventbridge`: the bucket sends to EventBridge, a rule invokes the function asynchronously;
 * - `s3-sqs`: S3 notifications go to a queue (with DLQ) polled by the function;
 * - `sqs`: a queue (with DLQ) that producers send messages to; no input bucket;
 * - `kinesis`: a Kinesis data stream (created encrypted, or `kinesisStream`) polled by the function;
 * - `dynamodb-streams`: the stream of a DynamoDB table (created, or `sourceTable`) polled by the function.
 * The stream deliveries send the batches they give up on to the DLQ (an on-failure destination).
 */
export type DeliveryKind = "s3-direct" | "s3-eventbridge" | "s3-sqs" | "sqs" | "kinesis" | "dynamodb-streams";
/** Every `DeliveryKind`, in the order the docs list them. */
export const DELIVERIES: readonly DeliveryKind[] = [
  "s3-direct",
  "s3-eventbridge",
  "s3-sqs",
  "sqs",
  "kinesis",
  "dynamodb-streams",
];

/** What a DynamoDB stream record holds of the changed item (`dynamodb-streams`, a table the construct creates). */
export type StreamViewType = "NEW_AND_OLD_IMAGES" | "NEW_IMAGE" | "OLD_IMAGE" | "KEYS_ONLY";
/** Every `StreamViewType`. */
export const STREAM_VIEW_TYPES: readonly StreamViewType[] = [
  "NEW_AND_OLD_IMAGES",
  "NEW_IMAGE",
  "OLD_IMAGE",
  "KEYS_ONLY",
];

/** What happens to the buckets, tables and log group when the stack is deleted. */
export type Removal = "retain" | "destroy";

/**
 * The props of `EffectivelyOncePipeline`; checked when the construct is created (unknown keys and unsafe
 * values throw `OptionsError`).
 */
export interface EffectivelyOncePipelineProps {
  /** Names the pipeline: the `pipeline` metric dimension, the service name in logs, resource descriptions. */
  pipelineName: string;
  /** How events reach the function: S3 directly, through EventBridge, through SQS, or SQS messages. */
  delivery: DeliveryKind;
  /** The handler file (TypeScript or JavaScript), bundled with esbuild. Required unless `code` is given. */
  entry?: string;
  /** The exported function, `handler` by default; with `code`, `file.export` (e.g. `index.handler`). */
  handler?: string;
  /** Prebuilt code instead of bundling `entry` (prebuilt artifacts, fast tests). */
  code?: lambda.Code;
  /** The directory with package-lock.json, used by esbuild to resolve modules. Default: found from `entry`. */
  projectRoot?: string;
  /** Function timeout. Default 30. */
  timeoutSeconds?: number;
  /** Default 512 (more memory is also more CPU: faster cold starts and hashing). */
  memoryMiB?: number;
  /** Default `arm64` (Graviton: cheaper per GB-second). */
  architecture?: Architecture;
  /**
   * Packages with native code, kept out of the bundle and copied (with their dependencies) from the
   * project's node_modules, so synth stays offline. Their binaries must be for Linux (glibc) on the
   * function's architecture: synth checks and says what to install otherwise. Example: `["sharp"]`.
   */
  nativeModules?: string[];
  /**
   * Source queue visibility timeout (`s3-sqs`, `sqs`). Default and minimum: 6 × timeoutSeconds
   * (+ maxBatchingWindowSeconds), as Lambda recommends: a message must not reappear while a run,
   * its retries on throttling and its batch window still hold it.
   */
  visibilityTimeoutSeconds?: number;
  /** Receives before a message goes to the DLQ. Default and minimum 5 (a throttled batch counts as a receive). */
  maxReceiveCount?: number;
  /** Messages or records per invocation (queued and stream deliveries). Default 10 (SQS), 100 (streams). */
  batchSize?: number;
  /** Wait up to this long to fill a batch (queued and stream deliveries). Default 0. Not with FIFO queues. */
  maxBatchingWindowSeconds?: number;
  /** Most concurrent invocations the queue poller starts (2–1000). Default: unlimited. */
  maxConcurrency?: number;
  /** A FIFO source queue (`sqs` only): per-group order at the source. Default false. */
  fifo?: boolean;
  /** An existing stream to read (`kinesis`). Default: the construct creates one (on demand, encrypted, 7 days). */
  kinesisStream?: kinesis.IStream;
  /**
   * Shards of the created stream in provisioned mode (`kinesis` without `kinesisStream`, 1–500). Default: on-demand
   * mode (no shard count to plan; a fixed hourly price per stream, more than one provisioned shard's when idle).
   */
  shardCount?: number;
  /**
   * An existing table whose stream to read (`dynamodb-streams`); its stream must be enabled. Default: the construct
   * creates one (hash key `pk`, a string) with a stream of `streamViewType`.
   */
  sourceTable?: dynamodb.ITable;
  /** The created source table's stream view (`dynamodb-streams` without `sourceTable`). Default `NEW_AND_OLD_IMAGES`. */
  streamViewType?: StreamViewType;
  /**
   * Batches in flight per shard (stream deliveries, 1–10). Default 1. Order per partition key holds at any factor
   * (records of one key stay in one batch lane), but more batches of the shard run at once.
   */
  parallelizationFactor?: number;
  /** Retries of a failed batch before it goes to the DLQ (stream deliveries, 0–10000). Default 10. */
  retryAttempts?: number;
  /**
   * Records older than this go to the DLQ unprocessed (stream deliveries, 60 s – 7 days; `dynamodb-streams` at most
   * its 24 h retention). Default 1 day (`kinesis`), 12 hours (`dynamodb-streams`).
   */
  maxRecordAgeSeconds?: number;
  /** Alarm when the oldest record waits this long (Lambda's IteratorAge; stream deliveries). Default 900. */
  iteratorAgeAlarmSeconds?: number;
  /** Only objects under this key prefix (S3 deliveries). */
  objectKeyPrefix?: string;
  /** Only objects with this key suffix (S3 deliveries). */
  objectKeySuffix?: string;
  /** Deliver removal events too (S3 deliveries). Default true: a delete must be ordered against the creates. */
  includeRemovals?: boolean;
  /** The function reads the objects of the input bucket (s3:GetObject). Default true for S3 deliveries. */
  inputBucketRead?: boolean;
  /** Create an output bucket; the function may write objects to it. Default false. */
  outputBucket?: boolean;
  /** Create a records table for a fenced DynamoDB sink (`true`: the defaults of RecordsTableOptions). */
  recordsTable?: boolean | RecordsTableOptions;
  /** Read access the function needs on the output bucket besides PutObject (e.g. a HEAD before a conditional put). */
  outputBucketRead?: boolean;
  /** Extra environment variables for the function. */
  environment?: Record<string, string>;
  /** Log retention in days; one of CloudWatch's allowed values. Default 30. */
  logRetentionDays?: number;
  /** Default `retain`: buckets, tables and the log group outlive the stack; `destroy` empties and deletes them. */
  removal?: Removal;
  /** Server access logs for the buckets go here (prefix `<pipelineName>/`). Default: none. */
  accessLogsBucket?: s3.IBucket;
  /** Notified when an alarm fires (and when it recovers). */
  alarmActions?: cloudwatch.IAlarmAction[];
  /** Alarm when this many deliveries fail within 5 minutes (they are retried, then dead-lettered). Default 1. */
  failedAlarmThreshold?: number;
  /** CloudWatch namespace of the pipeline metrics. Default `EffectivelyOnce`. */
  metricsNamespace?: string;
  /** Create a CloudWatch dashboard. Default true. */
  dashboard?: boolean;
  /** Where the guard keeps its state. Default `{ kind: "table" }`: a state table in the stack. */
  state?: StateOptions;
  /**
   * A transactional outbox (`ctx.publish`, docs/effects.md): the DynamoDB outbox table, written by the function's
   * commits, and a relay function on its stream that sends each entry to its destination.
   */
  outbox?: OutboxOptions;
}

/**
 * The outbox of a pipeline: its table (partition key `subject`, sort key `order`, stream NEW_IMAGE, TTL
 * `expiresAt`), named to the function in `OUTBOX_TABLE`, and the relay function on its stream.
 */
export interface OutboxOptions {
  /**
   * The relay's handler file, bundled as `entry` is: `outboxStreamHandler` with a `DynamoDBOutbox` on
   * `process.env.OUTBOX_TABLE` and `awsOutboxSender()` (docs/deploy.md). Required unless `relayCode` is given.
   */
  relayEntry?: string;
  /** Prebuilt relay code instead of bundling `relayEntry`. */
  relayCode?: lambda.Code;
  /** The relay's export: `handler` by default; with `relayCode`, `file.export` (e.g. `index.handler`). */
  relayHandler?: string;
  /** Queues the relay sends to (sqs:SendMessage, and the key's use when a queue has one). */
  queues?: sqs.IQueue[];
  /** Topics the relay publishes to (sns:Publish). */
  topics?: sns.ITopic[];
  /** Event buses the relay puts events on (events:PutEvents). */
  eventBuses?: events.IEventBus[];
  /** The relay's timeout. Default 30. */
  relayTimeoutSeconds?: number;
  /** Stream records per relay invocation (1–10000). Default 100. */
  batchSize?: number;
  /** Retries of a failed batch before it goes to the DLQ (0–10000). Default 10. */
  retryAttempts?: number;
  /** Records older than this go to the DLQ unsent (60 s – 24 h, the stream's retention). Default 12 hours. */
  maxRecordAgeSeconds?: number;
}

/**
 * - `table`: the construct creates the state table and grants the function GetItem/UpdateItem on it;
 * - `inline`: the state lives in the rows of a table of the pipeline (InlineDynamoDBStore): no state table; the
 *   function gets GetItem/UpdateItem on that table only;
 * - `external`: the state lives outside the stack (PostgreSQL, a table of another stack): no state table, no grant
 *   (give the function its access yourself).
 */
export type StateOptions = TableStateOptions | InlineStateOptions | ExternalStateOptions;

/** The guard's state in a state table the construct creates (the default). */
export interface TableStateOptions {
  kind: "table";
}

/**
 * The guard's state inline, in the rows of the records table or of a table of yours (`InlineDynamoDBStore`).
 */
export interface InlineStateOptions {
  kind: "inline";
  /** The table whose rows hold the state. Default: the records table (`recordsTable` must be set). */
  table?: dynamodb.ITable;
  /**
   * The table's (string) hash key, the store's `keyAttribute`. Default: the records table's key attribute, else
   * `pk`.
   */
  keyAttribute?: string;
}

/**
 * The guard's state outside the stack (PostgreSQL, another stack's table): no state table, no DynamoDB grant.
 */
export interface ExternalStateOptions {
  kind: "external";
}

/** The function's processor architecture. */
export type Architecture = "arm64" | "x86_64";

/** The records table: the table the handler's effects go to, created by the construct. */
export interface RecordsTableOptions {
  /** The hash key (a string), the sink's `keyAttribute`. Default `pk`. */
  keyAttribute?: string;
  /** The environment variable that gives the function the table name. Default `RECORDS_TABLE`. */
  environmentVariable?: string;
  /**
   * What the function calls on it. Default `["dynamodb:PutItem"]`: the fenced sink's put, alone or
   * inside the guard's commit transaction (authorized as PutItem). Add GetItem if the handler reads.
   */
  actions?: RecordsTableAction[];
}

/** A DynamoDB action the function may be granted on the records table. */
export type RecordsTableAction = "dynamodb:PutItem" | "dynamodb:GetItem" | "dynamodb:UpdateItem";
/** Every `RecordsTableAction` (the values `RecordsTableOptions.actions` takes). */
export const RECORDS_TABLE_ACTIONS: readonly RecordsTableAction[] = [
  "dynamodb:PutItem",
  "dynamodb:GetItem",
  "dynamodb:UpdateItem",
];

export { MIN_MAX_RECEIVE_COUNT, VISIBILITY_TIMEOUT_FACTOR } from "./queue-rules.js";
