import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as s3 from "aws-cdk-lib/aws-s3";
import { describeValue } from "../core/describe-value.js";
import { OptionsError } from "../core/errors.js";
import { rejectUnknownKeys, requireOneOf } from "../core/options.js";
import { METRIC_NAMESPACE } from "./metrics.js";

/**
 * How events reach the function:
 * - `s3-direct`: S3 notifications invoke the function asynchronously (Lambda retries twice, then the DLQ);
 * - `s3-eventbridge`: the bucket sends to EventBridge, a rule invokes the function asynchronously;
 * - `s3-sqs`: S3 notifications go to a queue (with DLQ) polled by the function;
 * - `sqs`: a queue (with DLQ) that producers send messages to; no input bucket.
 */
export type Delivery = "s3-direct" | "s3-eventbridge" | "s3-sqs" | "sqs";
export const DELIVERIES: readonly Delivery[] = ["s3-direct", "s3-eventbridge", "s3-sqs", "sqs"];

/** What happens to the buckets, tables and log group when the stack is deleted. */
export type Removal = "retain" | "destroy";

export interface EffectivelyOncePipelineProps {
  /** Names the pipeline: the `pipeline` metric dimension, the service name in logs, resource descriptions. */
  pipelineName: string;
  delivery: Delivery;
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
  /** Messages per invocation (`s3-sqs`, `sqs`). Default 10. */
  batchSize?: number;
  /** Wait up to this long to fill a batch. Default 0. Not with FIFO queues. */
  maxBatchingWindowSeconds?: number;
  /** Most concurrent invocations the queue poller starts (2–1000). Default: unlimited. */
  maxConcurrency?: number;
  /** A FIFO source queue (`sqs` only): per-group order at the source. Default false. */
  fifo?: boolean;
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
}

export type Architecture = "arm64" | "x86_64";

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

export type RecordsTableAction = "dynamodb:PutItem" | "dynamodb:GetItem" | "dynamodb:UpdateItem";
const RECORDS_TABLE_ACTIONS: readonly RecordsTableAction[] = [
  "dynamodb:PutItem",
  "dynamodb:GetItem",
  "dynamodb:UpdateItem",
];

const PROP_KEYS = [
  "pipelineName",
  "delivery",
  "entry",
  "handler",
  "code",
  "projectRoot",
  "timeoutSeconds",
  "memoryMiB",
  "architecture",
  "nativeModules",
  "visibilityTimeoutSeconds",
  "maxReceiveCount",
  "batchSize",
  "maxBatchingWindowSeconds",
  "maxConcurrency",
  "fifo",
  "objectKeyPrefix",
  "objectKeySuffix",
  "includeRemovals",
  "inputBucketRead",
  "outputBucket",
  "recordsTable",
  "outputBucketRead",
  "environment",
  "logRetentionDays",
  "removal",
  "accessLogsBucket",
  "alarmActions",
  "failedAlarmThreshold",
  "metricsNamespace",
  "dashboard",
] as const satisfies readonly (keyof EffectivelyOncePipelineProps)[];

/** Lambda's rule of thumb for SQS sources: visibility timeout ≥ 6 × function timeout. */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
export const MIN_MAX_RECEIVE_COUNT = 5;
/** SQS limits. */
const MAX_VISIBILITY_TIMEOUT_SECONDS = 12 * 3600;
const MAX_LAMBDA_TIMEOUT_SECONDS = 900;

const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/** Props after validation, every default filled in. */
export interface ResolvedProps {
  pipelineName: string;
  delivery: Delivery;
  entry: string | undefined;
  handler: string | undefined;
  code: lambda.Code | undefined;
  projectRoot: string | undefined;
  timeoutSeconds: number;
  memoryMiB: number;
  architecture: Architecture;
  nativeModules: string[];
  /** Undefined when the delivery has no queue. */
  visibilityTimeoutSeconds: number | undefined;
  maxReceiveCount: number;
  batchSize: number;
  maxBatchingWindowSeconds: number;
  maxConcurrency: number | undefined;
  fifo: boolean;
  objectKeyPrefix: string | undefined;
  objectKeySuffix: string | undefined;
  includeRemovals: boolean;
  inputBucketRead: boolean;
  outputBucket: boolean;
  outputBucketRead: boolean;
  recordsTable: Required<RecordsTableOptions> | undefined;
  environment: Record<string, string>;
  logRetentionDays: number;
  removal: Removal;
  accessLogsBucket: s3.IBucket | undefined;
  alarmActions: cloudwatch.IAlarmAction[];
  failedAlarmThreshold: number;
  metricsNamespace: string;
  dashboard: boolean;
}

const WHAT = "EffectivelyOncePipeline";

function fail(message: string): never {
  throw new OptionsError(`${WHAT}: ${message}`);
}

function optionalInteger(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    fail(`${name} must be an integer from ${min} to ${max}, got ${describeValue(value)}`);
  }
  return value;
}

function optionalBoolean(name: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") fail(`${name} must be a boolean, got ${describeValue(value)}`);
  return value;
}

function optionalString(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0) fail(`${name} must be a non-empty string`);
  return value;
}

/** Validates eagerly (at construction, so `cdk synth` fails with a message naming the option) and fills defaults. */
export function resolveProps(props: EffectivelyOncePipelineProps): ResolvedProps {
  if (typeof props !== "object" || props === null) fail("props are required");
  rejectUnknownKeys(WHAT, props, PROP_KEYS);

  const pipelineName = optionalString("pipelineName", props.pipelineName) ?? fail("pipelineName is required");
  if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,39}$/.test(pipelineName)) {
    fail(`pipelineName must be 1-40 letters, digits or dashes, got ${describeValue(pipelineName)}`);
  }
  const delivery = requireOneOf(WHAT, "delivery", props.delivery, DELIVERIES);
  const queued = delivery === "s3-sqs" || delivery === "sqs";
  const fromS3 = delivery !== "sqs";

  // Code: a file to bundle, or prebuilt code with an explicit handler.
  const entry = optionalString("entry", props.entry);
  const handler = optionalString("handler", props.handler);
  const code = props.code;
  if (entry !== undefined && code !== undefined)
    fail("give either entry (bundled) or code (prebuilt), not both");
  if (entry === undefined && code === undefined)
    fail("entry (the handler file to bundle) or code is required");
  if (code !== undefined && (handler === undefined || !handler.includes("."))) {
    fail('with code, handler must name the file and the export, e.g. "index.handler"');
  }
  const projectRoot = optionalString("projectRoot", props.projectRoot);

  const timeoutSeconds =
    optionalInteger("timeoutSeconds", props.timeoutSeconds, 1, MAX_LAMBDA_TIMEOUT_SECONDS) ?? 30;
  const memoryMiB = optionalInteger("memoryMiB", props.memoryMiB, 128, 10_240) ?? 512;
  const architecture = requireOneOf(WHAT, "architecture", props.architecture ?? "arm64", [
    "arm64",
    "x86_64",
  ] as const);
  const nativeModules = props.nativeModules ?? [];
  if (
    !Array.isArray(nativeModules) ||
    nativeModules.some((m) => typeof m !== "string" || !/^(@[\w.-]+\/)?[\w.-]+$/.test(m))
  ) {
    fail("nativeModules must be a list of package names");
  }
  if (nativeModules.length > 0 && code !== undefined)
    fail("nativeModules applies to bundled entries, not to code");

  const onlyQueued = (name: keyof EffectivelyOncePipelineProps) => {
    if (props[name] !== undefined && !queued) fail(`${name} applies to the s3-sqs and sqs deliveries only`);
  };
  const onlyS3 = (name: keyof EffectivelyOncePipelineProps) => {
    if (props[name] !== undefined && !fromS3) fail(`${name} applies to the S3 deliveries only`);
  };
  for (const name of [
    "visibilityTimeoutSeconds",
    "batchSize",
    "maxBatchingWindowSeconds",
    "maxConcurrency",
    "fifo",
  ] as const) {
    onlyQueued(name);
  }
  for (const name of ["objectKeyPrefix", "objectKeySuffix", "includeRemovals", "inputBucketRead"] as const) {
    onlyS3(name);
  }
  if (props.fifo !== undefined && delivery !== "sqs") fail("fifo applies to the sqs delivery only");

  const fifo = optionalBoolean("fifo", props.fifo) ?? false;
  const maxBatchingWindowSeconds =
    optionalInteger("maxBatchingWindowSeconds", props.maxBatchingWindowSeconds, 0, 300) ?? 0;
  if (fifo && maxBatchingWindowSeconds > 0)
    fail("maxBatchingWindowSeconds is not supported with FIFO queues");
  const batchSize = optionalInteger("batchSize", props.batchSize, 1, fifo ? 10 : 10_000) ?? 10;
  if (batchSize > 10 && maxBatchingWindowSeconds === 0) {
    fail("batchSize above 10 needs maxBatchingWindowSeconds of at least 1 (an SQS event source rule)");
  }
  const maxConcurrency = optionalInteger("maxConcurrency", props.maxConcurrency, 2, 1000);

  // The one default this construct exists for: a message must stay invisible while it is being handled.
  let visibilityTimeoutSeconds: number | undefined;
  if (queued) {
    const minimum = VISIBILITY_TIMEOUT_FACTOR * timeoutSeconds + maxBatchingWindowSeconds;
    const given = optionalInteger(
      "visibilityTimeoutSeconds",
      props.visibilityTimeoutSeconds,
      0,
      MAX_VISIBILITY_TIMEOUT_SECONDS,
    );
    if (given !== undefined && given < minimum) {
      fail(
        `visibilityTimeoutSeconds (${given}) must be at least ${VISIBILITY_TIMEOUT_FACTOR} × timeoutSeconds` +
          `${maxBatchingWindowSeconds ? " + maxBatchingWindowSeconds" : ""} = ${minimum}: a shorter timeout lets a ` +
          "second consumer receive a message while the first still handles it. Raise visibilityTimeoutSeconds " +
          "or lower timeoutSeconds (or leave visibilityTimeoutSeconds unset: it is computed).",
      );
    }
    // At most 6 × 900 + 300 = 5700 s: always within SQS's 12 hours.
    visibilityTimeoutSeconds = given ?? minimum;
  }

  const maxReceiveCount =
    optionalInteger("maxReceiveCount", props.maxReceiveCount, 1, 1000) ?? MIN_MAX_RECEIVE_COUNT;
  if (maxReceiveCount < MIN_MAX_RECEIVE_COUNT) {
    fail(
      `maxReceiveCount (${maxReceiveCount}) must be at least ${MIN_MAX_RECEIVE_COUNT}: throttled or busy ` +
        "deliveries count as receives, and a lower value dead-letters messages that would succeed on retry",
    );
  }
  if (props.maxReceiveCount !== undefined && !queued) {
    fail("maxReceiveCount applies to the s3-sqs and sqs deliveries only (async invokes retry twice)");
  }

  const outputBucket = optionalBoolean("outputBucket", props.outputBucket) ?? false;
  const outputBucketRead = optionalBoolean("outputBucketRead", props.outputBucketRead) ?? false;
  if (outputBucketRead && !outputBucket) fail("outputBucketRead needs outputBucket: true");
  const recordsTable = resolveRecordsTable(props.recordsTable);

  const environment = props.environment ?? {};
  if (typeof environment !== "object" || environment === null || Array.isArray(environment)) {
    fail("environment must be an object of strings");
  }
  for (const [k, v] of Object.entries(environment)) {
    if (typeof v !== "string") fail(`environment.${k} must be a string`);
  }

  const logRetentionDays = props.logRetentionDays ?? 30;
  if (!LOG_RETENTION_DAYS.includes(logRetentionDays)) {
    fail(
      `logRetentionDays must be one of ${LOG_RETENTION_DAYS.join(", ")}, got ${describeValue(logRetentionDays)}`,
    );
  }
  const removal = requireOneOf(WHAT, "removal", props.removal ?? "retain", ["retain", "destroy"] as const);
  if (props.accessLogsBucket !== undefined && !fromS3 && !outputBucket) {
    fail("accessLogsBucket is given but the pipeline has no bucket");
  }
  const alarmActions = props.alarmActions ?? [];
  if (!Array.isArray(alarmActions)) fail("alarmActions must be a list");
  const failedAlarmThreshold =
    optionalInteger("failedAlarmThreshold", props.failedAlarmThreshold, 1, 1_000_000) ?? 1;
  const metricsNamespace = optionalString("metricsNamespace", props.metricsNamespace) ?? METRIC_NAMESPACE;
  const dashboard = optionalBoolean("dashboard", props.dashboard) ?? true;

  return {
    pipelineName,
    delivery,
    entry,
    handler,
    code,
    projectRoot,
    timeoutSeconds,
    memoryMiB,
    architecture,
    nativeModules,
    visibilityTimeoutSeconds,
    maxReceiveCount,
    batchSize,
    maxBatchingWindowSeconds,
    maxConcurrency,
    fifo,
    objectKeyPrefix: optionalString("objectKeyPrefix", props.objectKeyPrefix),
    objectKeySuffix: optionalString("objectKeySuffix", props.objectKeySuffix),
    includeRemovals: optionalBoolean("includeRemovals", props.includeRemovals) ?? true,
    inputBucketRead: optionalBoolean("inputBucketRead", props.inputBucketRead) ?? fromS3,
    outputBucket,
    outputBucketRead,
    recordsTable,
    environment,
    logRetentionDays,
    removal,
    accessLogsBucket: props.accessLogsBucket,
    alarmActions,
    failedAlarmThreshold,
    metricsNamespace,
    dashboard,
  };
}

const RECORDS_TABLE_KEYS = ["keyAttribute", "environmentVariable", "actions"] as const;

function resolveRecordsTable(value: unknown): Required<RecordsTableOptions> | undefined {
  if (value === undefined || value === false) return undefined;
  const options = value === true ? {} : value;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    fail("recordsTable must be true, false or an object");
  }
  rejectUnknownKeys(`${WHAT}: recordsTable`, options, RECORDS_TABLE_KEYS);
  const o = options as RecordsTableOptions;
  const keyAttribute = optionalString("recordsTable.keyAttribute", o.keyAttribute) ?? "pk";
  const environmentVariable =
    optionalString("recordsTable.environmentVariable", o.environmentVariable) ?? "RECORDS_TABLE";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(environmentVariable)) {
    fail(
      `recordsTable.environmentVariable must be a variable name, got ${describeValue(environmentVariable)}`,
    );
  }
  let actions: RecordsTableAction[] = ["dynamodb:PutItem"];
  if (o.actions !== undefined) {
    if (!Array.isArray(o.actions) || o.actions.length === 0)
      fail("recordsTable.actions must be a non-empty list");
    actions = [
      ...new Set(o.actions.map((a) => requireOneOf(WHAT, "recordsTable.actions", a, RECORDS_TABLE_ACTIONS))),
    ];
  }
  return { keyAttribute, environmentVariable, actions };
}
