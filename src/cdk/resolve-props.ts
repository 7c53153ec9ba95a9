import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as kinesis from "aws-cdk-lib/aws-kinesis";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as s3 from "aws-cdk-lib/aws-s3";
import { OptionsError } from "../core/errors.js";
import {
  boolean,
  checkField,
  custom,
  integer,
  oneOf,
  optionsRule,
  type Resolved,
  required,
  resolveOptions,
  schemaFor,
  string,
} from "../core/options.js";
import { METRIC_NAMESPACE } from "./metrics.js";
import {
  type Architecture,
  DELIVERIES,
  type DeliveryKind,
  type EffectivelyOncePipelineProps,
  MIN_MAX_RECEIVE_COUNT,
  type OutboxOptions,
  RECORDS_TABLE_ACTIONS,
  type RecordsTableAction,
  type RecordsTableOptions,
  type Removal,
  STREAM_VIEW_TYPES,
  type StateOptions,
  type StreamViewType,
  VISIBILITY_TIMEOUT_FACTOR,
} from "./props.js";
import { type OutboxSettings, resolveOutbox } from "./resolve-outbox.js";
import { type ResolvedState, resolveState } from "./resolve-state.js";

const WHAT = "EffectivelyOncePipeline";
/** Lambda and SQS limits. */
const MAX_LAMBDA_TIMEOUT_SECONDS = 900;
const MAX_VISIBILITY_TIMEOUT_SECONDS = 12 * 3600;
/** Lambda's bound of MaximumRecordAgeInSeconds (besides -1, infinite, which the construct never sets). */
const MAX_RECORD_AGE_SECONDS = 7 * 24 * 3600;
/** A DynamoDB stream keeps records 24 hours: a longer record age never applies. */
const DYNAMODB_STREAM_RETENTION_SECONDS = 24 * 3600;
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);
const isStream = (v: unknown) =>
  isObject(v) &&
  typeof (v as kinesis.IStream).streamArn === "string" &&
  typeof (v as kinesis.IStream).grantRead === "function";
const isTable = (v: unknown) =>
  isObject(v) &&
  typeof (v as dynamodb.ITable).tableArn === "string" &&
  typeof (v as dynamodb.ITable).grantStreamRead === "function";
const isPackageList = (v: unknown) =>
  Array.isArray(v) && v.every((m) => typeof m === "string" && /^(@[\w.-]+\/)?[\w.-]+$/.test(m));

/** The construct's props, field by field; defaults that depend on other props are filled in by resolveProps. */
export const PIPELINE_PROPS = schemaFor<EffectivelyOncePipelineProps>()({
  pipelineName: required(
    string({ pattern: /^[A-Za-z0-9][A-Za-z0-9-]{0,39}$/, expected: "1-40 letters, digits or dashes" }),
  ),
  delivery: required(oneOf(DELIVERIES)),
  entry: string(),
  handler: string(),
  code: custom<lambda.Code>("a lambda.Code", isObject),
  projectRoot: string(),
  timeoutSeconds: integer({ min: 1, max: MAX_LAMBDA_TIMEOUT_SECONDS, default: 30 }),
  memoryMiB: integer({ min: 128, max: 10_240, default: 512 }),
  architecture: oneOf(["arm64", "x86_64"], { default: "arm64" }),
  nativeModules: custom<string[], { default: string[] }>("a list of package names", isPackageList, {
    default: [],
  }),
  // Default: the minimum, computed from timeoutSeconds and maxBatchingWindowSeconds.
  visibilityTimeoutSeconds: integer({ min: 0, max: MAX_VISIBILITY_TIMEOUT_SECONDS }),
  maxReceiveCount: integer({ min: 1, max: 1000, default: MIN_MAX_RECEIVE_COUNT }),
  // Default per delivery: 10 (SQS), 100 (streams, Lambda's own default).
  batchSize: integer({ min: 1, max: 10_000 }),
  maxBatchingWindowSeconds: integer({ min: 0, max: 300, default: 0 }),
  maxConcurrency: integer({ min: 2, max: 1000 }),
  fifo: boolean({ default: false }),
  kinesisStream: custom<kinesis.IStream>("a Kinesis stream (kinesis.IStream)", isStream),
  shardCount: integer({ min: 1, max: 500 }),
  sourceTable: custom<dynamodb.ITable>("a DynamoDB table (dynamodb.ITable)", isTable),
  streamViewType: oneOf(STREAM_VIEW_TYPES),
  parallelizationFactor: integer({ min: 1, max: 10, default: 1 }),
  // Never -1 (infinite): a poison batch would block its shard until the stream trims it.
  retryAttempts: integer({ min: 0, max: 10_000, default: 10 }),
  // Default per delivery (streamSettings).
  maxRecordAgeSeconds: integer({ min: 60, max: MAX_RECORD_AGE_SECONDS }),
  iteratorAgeAlarmSeconds: integer({ min: 1, max: MAX_RECORD_AGE_SECONDS, default: 900 }),
  objectKeyPrefix: string(),
  objectKeySuffix: string(),
  includeRemovals: boolean({ default: true }),
  // Default: true (every delivery that has it is from S3).
  inputBucketRead: boolean(),
  outputBucket: boolean({ default: false }),
  recordsTable: custom<boolean | RecordsTableOptions>(
    "true, false or an object",
    (v) => typeof v === "boolean" || isObject(v),
  ),
  outputBucketRead: boolean({ default: false }),
  environment: custom<Record<string, string>, { default: Record<string, string> }>(
    "an object of strings",
    isObject,
    { default: {} },
  ),
  logRetentionDays: custom<number, { default: number }>(
    `one of ${LOG_RETENTION_DAYS.join(", ")}`,
    (v) => LOG_RETENTION_DAYS.includes(v as number),
    { default: 30 },
  ),
  removal: oneOf(["retain", "destroy"], { default: "retain" }),
  accessLogsBucket: custom<s3.IBucket>("a bucket (s3.IBucket)", isObject),
  alarmActions: custom<cloudwatch.IAlarmAction[], { default: cloudwatch.IAlarmAction[] }>(
    "a list",
    Array.isArray,
    { default: [] },
  ),
  failedAlarmThreshold: integer({ min: 1, max: 1_000_000, default: 1 }),
  metricsNamespace: string({ default: METRIC_NAMESPACE }),
  dashboard: boolean({ default: true }),
  // Checked per kind by resolveState (resolve-state.ts).
  state: custom<StateOptions>("an object with kind", isObject),
  // Checked by resolveOutbox (resolve-outbox.ts).
  outbox: custom<OutboxOptions>("an object", isObject),
});

const RECORDS_TABLE_OPTIONS = schemaFor<RecordsTableOptions>()({
  keyAttribute: string({ default: "pk" }),
  environmentVariable: string({
    pattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    expected: "a variable name",
    default: "RECORDS_TABLE",
  }),
  actions: custom<RecordsTableAction[], { default: RecordsTableAction[] }>(
    "a non-empty list",
    (v) => Array.isArray(v) && v.length > 0,
    { default: ["dynamodb:PutItem"] },
  ),
});

/** What the function runs: a file bundled by esbuild, or prebuilt code. */
export type FunctionSource =
  | {
      readonly kind: "bundle";
      readonly entry: string;
      readonly handler: string;
      readonly projectRoot: string | undefined;
      readonly nativeModules: readonly string[];
    }
  | { readonly kind: "prebuilt"; readonly code: lambda.Code; readonly handler: string };

/** What every delivery has. */
interface CommonProps {
  readonly pipelineName: string;
  readonly source: FunctionSource;
  readonly timeoutSeconds: number;
  readonly memoryMiB: number;
  readonly architecture: Architecture;
  readonly outputBucket: boolean;
  readonly outputBucketRead: boolean;
  readonly recordsTable: Required<RecordsTableOptions> | undefined;
  readonly state: ResolvedState;
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetentionDays: number;
  readonly removal: Removal;
  readonly accessLogsBucket: s3.IBucket | undefined;
  readonly alarmActions: readonly cloudwatch.IAlarmAction[];
  readonly failedAlarmThreshold: number;
  readonly metricsNamespace: string;
  readonly dashboard: boolean;
  readonly outbox: OutboxSettings | undefined;
}

/** The input bucket's events (S3 deliveries). */
export interface S3Settings {
  readonly objectKeyPrefix: string | undefined;
  readonly objectKeySuffix: string | undefined;
  readonly includeRemovals: boolean;
  readonly inputBucketRead: boolean;
}

/** The source queue and its event source mapping (queued deliveries). */
export interface QueueSettings {
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount: number;
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  readonly maxConcurrency: number | undefined;
  readonly fifo: boolean;
}

/** The stream and its event source mapping (stream deliveries). */
export interface StreamSettings {
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
  readonly parallelizationFactor: number;
  readonly retryAttempts: number;
  readonly maxRecordAgeSeconds: number;
  readonly iteratorAgeAlarmSeconds: number;
}

/** The Kinesis stream to read: the user's, or undefined (the construct creates one, provisioned when shardCount). */
export interface KinesisSettings extends StreamSettings {
  readonly stream: kinesis.IStream | undefined;
  readonly shardCount: number | undefined;
}

/** The table whose stream to read: the user's, or undefined (the construct creates one with `viewType`). */
export interface DynamoDBStreamSettings extends StreamSettings {
  readonly table: dynamodb.ITable | undefined;
  readonly viewType: StreamViewType;
}

interface NoStream {
  readonly kinesis?: undefined;
  readonly dynamodb?: undefined;
}
interface NoBucketNorQueue {
  readonly s3?: undefined;
  readonly queue?: undefined;
}

/** Props after validation, every default filled in: each delivery has the settings it uses and no others. */
export type ResolvedProps =
  | (CommonProps &
      NoStream & { readonly delivery: "s3-direct"; readonly s3: S3Settings; readonly queue?: undefined })
  | (CommonProps &
      NoStream & {
        readonly delivery: "s3-eventbridge";
        readonly s3: S3Settings;
        readonly queue?: undefined;
      })
  | (CommonProps &
      NoStream & { readonly delivery: "s3-sqs"; readonly s3: S3Settings; readonly queue: QueueSettings })
  | (CommonProps &
      NoStream & { readonly delivery: "sqs"; readonly s3?: undefined; readonly queue: QueueSettings })
  | (CommonProps &
      NoBucketNorQueue & {
        readonly delivery: "kinesis";
        readonly kinesis: KinesisSettings;
        readonly dynamodb?: undefined;
      })
  | (CommonProps &
      NoBucketNorQueue & {
        readonly delivery: "dynamodb-streams";
        readonly kinesis?: undefined;
        readonly dynamodb: DynamoDBStreamSettings;
      });

type Fields = Resolved<typeof PIPELINE_PROPS>;

/** Validates eagerly (at construction, so `cdk synth` fails with a message naming the option) and fills defaults. */
export function resolveProps(props: EffectivelyOncePipelineProps): ResolvedProps {
  const o = resolveOptions(WHAT, PIPELINE_PROPS, props);
  checkDeliveryOptions(props, o.delivery);
  const common: CommonProps = {
    pipelineName: o.pipelineName,
    source: functionSource(o),
    timeoutSeconds: o.timeoutSeconds,
    memoryMiB: o.memoryMiB,
    architecture: o.architecture,
    ...outputs(o),
    environment: environment(o.environment),
    logRetentionDays: o.logRetentionDays,
    removal: o.removal,
    accessLogsBucket: o.accessLogsBucket,
    alarmActions: o.alarmActions,
    failedAlarmThreshold: o.failedAlarmThreshold,
    metricsNamespace: o.metricsNamespace,
    dashboard: o.dashboard,
    outbox: o.outbox === undefined ? undefined : resolveOutbox(o.outbox),
  };
  optionsRule(
    WHAT,
    o.accessLogsBucket === undefined || FROM_S3.includes(o.delivery) || o.outputBucket,
    "accessLogsBucket is given but the pipeline has no bucket",
  );
  switch (o.delivery) {
    case "s3-direct":
    case "s3-eventbridge":
      return { ...common, delivery: o.delivery, s3: s3Settings(o) };
    case "s3-sqs":
      return { ...common, delivery: o.delivery, s3: s3Settings(o), queue: queueSettings(o) };
    case "sqs":
      return { ...common, delivery: o.delivery, queue: queueSettings(o) };
    case "kinesis":
      return { ...common, delivery: o.delivery, kinesis: kinesisSettings(o) };
    case "dynamodb-streams":
      return { ...common, delivery: o.delivery, dynamodb: dynamoDBStreamSettings(o) };
  }
}

const QUEUED: readonly DeliveryKind[] = ["s3-sqs", "sqs"];
const FROM_S3: readonly DeliveryKind[] = ["s3-direct", "s3-eventbridge", "s3-sqs"];
const STREAMS: readonly DeliveryKind[] = ["kinesis", "dynamodb-streams"];
const BATCHED: readonly DeliveryKind[] = [...QUEUED, ...STREAMS];
const QUEUED_ONLY = "the s3-sqs and sqs deliveries only";
const S3_ONLY = "the S3 deliveries only";
const STREAMS_ONLY = "the kinesis and dynamodb-streams deliveries only";
const BATCHED_ONLY = "the s3-sqs, sqs, kinesis and dynamodb-streams deliveries only";

/** Props that only some deliveries use: given for another, they would be silently ignored. */
const APPLIES_TO: readonly [keyof EffectivelyOncePipelineProps, readonly DeliveryKind[], string][] = [
  ["visibilityTimeoutSeconds", QUEUED, QUEUED_ONLY],
  ["batchSize", BATCHED, BATCHED_ONLY],
  ["maxBatchingWindowSeconds", BATCHED, BATCHED_ONLY],
  ["maxConcurrency", QUEUED, QUEUED_ONLY],
  ["fifo", ["sqs"], "the sqs delivery only"],
  ["maxReceiveCount", QUEUED, `${QUEUED_ONLY} (async invokes retry twice)`],
  ["objectKeyPrefix", FROM_S3, S3_ONLY],
  ["objectKeySuffix", FROM_S3, S3_ONLY],
  ["includeRemovals", FROM_S3, S3_ONLY],
  ["inputBucketRead", FROM_S3, S3_ONLY],
  ["kinesisStream", ["kinesis"], "the kinesis delivery only"],
  ["shardCount", ["kinesis"], "the kinesis delivery only"],
  ["sourceTable", ["dynamodb-streams"], "the dynamodb-streams delivery only"],
  ["streamViewType", ["dynamodb-streams"], "the dynamodb-streams delivery only"],
  ["parallelizationFactor", STREAMS, STREAMS_ONLY],
  ["retryAttempts", STREAMS, STREAMS_ONLY],
  ["maxRecordAgeSeconds", STREAMS, STREAMS_ONLY],
  ["iteratorAgeAlarmSeconds", STREAMS, STREAMS_ONLY],
];

/** Checks the props as given (the resolved ones have defaults filled in). */
function checkDeliveryOptions(props: EffectivelyOncePipelineProps, delivery: DeliveryKind): void {
  for (const [name, deliveries, which] of APPLIES_TO) {
    optionsRule(
      WHAT,
      props[name] === undefined || deliveries.includes(delivery),
      `${name} applies to ${which}`,
    );
  }
}

/** Code: a file to bundle, or prebuilt code with an explicit `file.export` handler. */
function functionSource(o: Fields): FunctionSource {
  optionsRule(
    WHAT,
    o.entry === undefined || o.code === undefined,
    "give either entry (bundled) or code (prebuilt), not both",
  );
  if (o.code !== undefined) {
    const handler = o.handler;
    if (!handler?.includes(".")) {
      throw new OptionsError(
        `${WHAT}: with code, handler must name the file and the export, e.g. "index.handler"`,
      );
    }
    optionsRule(WHAT, o.nativeModules.length === 0, "nativeModules applies to bundled entries, not to code");
    return { kind: "prebuilt", code: o.code, handler };
  }
  if (o.entry === undefined)
    throw new OptionsError(`${WHAT}: entry (the handler file to bundle) or code is required`);
  return {
    kind: "bundle",
    entry: o.entry,
    handler: o.handler ?? "handler",
    projectRoot: o.projectRoot,
    nativeModules: o.nativeModules,
  };
}

function s3Settings(o: Fields): S3Settings {
  return {
    objectKeyPrefix: o.objectKeyPrefix,
    objectKeySuffix: o.objectKeySuffix,
    includeRemovals: o.includeRemovals,
    inputBucketRead: o.inputBucketRead ?? true,
  };
}

function queueSettings(o: Fields): QueueSettings {
  const { fifo, maxBatchingWindowSeconds: window, maxReceiveCount } = o;
  const batchSize = o.batchSize ?? 10;
  optionsRule(WHAT, !fifo || window === 0, "maxBatchingWindowSeconds is not supported with FIFO queues");
  optionsRule(
    WHAT,
    !fifo || batchSize <= 10,
    `batchSize must be at most 10 with a FIFO queue, got ${batchSize}`,
  );
  optionsRule(
    WHAT,
    batchSize <= 10 || window > 0,
    "batchSize above 10 needs maxBatchingWindowSeconds of at least 1 (an SQS event source rule)",
  );
  optionsRule(
    WHAT,
    maxReceiveCount >= MIN_MAX_RECEIVE_COUNT,
    `maxReceiveCount (${maxReceiveCount}) must be at least ${MIN_MAX_RECEIVE_COUNT}: throttled or busy ` +
      "deliveries count as receives, and a lower value dead-letters messages that would succeed on retry",
  );
  return {
    visibilityTimeoutSeconds: visibilityTimeout(o),
    maxReceiveCount,
    batchSize,
    maxBatchingWindowSeconds: window,
    maxConcurrency: o.maxConcurrency,
    fifo,
  };
}

/**
 * The stream's mapping. TRIM_HORIZON, bisection, item failures and the DLQ are not options (delivery.ts);
 * tumbling windows are not offered (the stream wrappers refuse them).
 */
function streamSettings(o: Fields, maxRecordAgeDefault = 24 * 3600): StreamSettings {
  const maxRecordAgeSeconds = o.maxRecordAgeSeconds ?? maxRecordAgeDefault;
  optionsRule(
    WHAT,
    o.iteratorAgeAlarmSeconds < maxRecordAgeSeconds,
    `iteratorAgeAlarmSeconds (${o.iteratorAgeAlarmSeconds}) must be under maxRecordAgeSeconds ` +
      `(${maxRecordAgeSeconds}): the alarm must fire before records age out to the DLQ`,
  );
  return {
    batchSize: o.batchSize ?? 100,
    maxBatchingWindowSeconds: o.maxBatchingWindowSeconds,
    parallelizationFactor: o.parallelizationFactor,
    retryAttempts: o.retryAttempts,
    maxRecordAgeSeconds,
    iteratorAgeAlarmSeconds: o.iteratorAgeAlarmSeconds,
  };
}

function kinesisSettings(o: Fields): KinesisSettings {
  optionsRule(
    WHAT,
    o.kinesisStream === undefined || o.shardCount === undefined,
    "shardCount applies to the stream the construct creates: kinesisStream's shards are set on that stream",
  );
  return { ...streamSettings(o), stream: o.kinesisStream, shardCount: o.shardCount };
}

function dynamoDBStreamSettings(o: Fields): DynamoDBStreamSettings {
  optionsRule(
    WHAT,
    o.maxRecordAgeSeconds === undefined || o.maxRecordAgeSeconds <= DYNAMODB_STREAM_RETENTION_SECONDS,
    `maxRecordAgeSeconds (${o.maxRecordAgeSeconds}) must be at most ${DYNAMODB_STREAM_RETENTION_SECONDS}: ` +
      "a DynamoDB stream keeps records 24 hours",
  );
  const table = o.sourceTable;
  optionsRule(
    WHAT,
    table === undefined || table.tableStreamArn !== undefined,
    "sourceTable has no stream: enable its stream (stream: NEW_AND_OLD_IMAGES), or import it with tableStreamArn",
  );
  optionsRule(
    WHAT,
    table === undefined || o.streamViewType === undefined,
    "streamViewType applies to the table the construct creates: sourceTable's stream is set on that table",
  );
  // Half the stream's 24 h: the DLQ message names the failed records (shard, sequence numbers), it does not hold
  // them, so they must still be in the stream when someone reads it.
  return {
    ...streamSettings(o, 12 * 3600),
    table,
    viewType: o.streamViewType ?? "NEW_AND_OLD_IMAGES",
  };
}

/** The one default this construct exists for: a message must stay invisible while it is being handled. */
function visibilityTimeout(o: Fields): number {
  const window = o.maxBatchingWindowSeconds;
  // At most 6 × 900 + 300 = 5700 s: always within SQS's 12 hours.
  const minimum = VISIBILITY_TIMEOUT_FACTOR * o.timeoutSeconds + window;
  const given = o.visibilityTimeoutSeconds;
  optionsRule(
    WHAT,
    given === undefined || given >= minimum,
    `visibilityTimeoutSeconds (${given}) must be at least ${VISIBILITY_TIMEOUT_FACTOR} × timeoutSeconds` +
      `${window ? " + maxBatchingWindowSeconds" : ""} = ${minimum}: a shorter timeout lets a ` +
      "second consumer receive a message while the first still handles it. Raise visibilityTimeoutSeconds " +
      "or lower timeoutSeconds (or leave visibilityTimeoutSeconds unset: it is computed).",
  );
  return given ?? minimum;
}

function outputs(
  o: Fields,
): Pick<CommonProps, "outputBucket" | "outputBucketRead" | "recordsTable" | "state"> {
  optionsRule(WHAT, !o.outputBucketRead || o.outputBucket, "outputBucketRead needs outputBucket: true");
  const actionsGiven = typeof o.recordsTable === "object" && o.recordsTable.actions !== undefined;
  const { state, recordsTable: records } = resolveState(
    WHAT,
    o.state,
    recordsTable(o.recordsTable),
    actionsGiven,
  );
  return { outputBucket: o.outputBucket, outputBucketRead: o.outputBucketRead, recordsTable: records, state };
}

const ENVIRONMENT_VALUE = custom<string>("a string", (v) => typeof v === "string");

function environment(env: Record<string, string>): Record<string, string> {
  for (const [k, v] of Object.entries(env)) checkField(WHAT, `environment.${k}`, ENVIRONMENT_VALUE, v);
  return env;
}

const RECORDS_TABLE_ACTION = oneOf(RECORDS_TABLE_ACTIONS);

function recordsTable(
  value: boolean | RecordsTableOptions | undefined,
): Required<RecordsTableOptions> | undefined {
  if (value === undefined || value === false) return undefined;
  const what = `${WHAT}: recordsTable`;
  const o = resolveOptions(what, RECORDS_TABLE_OPTIONS, value === true ? {} : value);
  const actions = o.actions.map((a) => checkField(what, "actions", RECORDS_TABLE_ACTION, a));
  return {
    keyAttribute: o.keyAttribute,
    environmentVariable: o.environmentVariable,
    actions: [...new Set(actions)],
  };
}
