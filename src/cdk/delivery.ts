import { Duration } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import type * as kinesis from "aws-cdk-lib/aws-kinesis";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sources from "aws-cdk-lib/aws-lambda-event-sources";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { QUEUE_CONSUMER_ACTIONS } from "./constants.js";
import type { PipelineParts } from "./pipeline-parts.js";
import type { QueueSettings, S3Settings, StreamSettings } from "./resolve-props.js";

/** Async invokes (S3, EventBridge): Lambda retries twice, then the event goes to the DLQ, never lost. */
export function configureAsyncInvoke(pipeline: PipelineParts): void {
  pipeline.function.configureAsyncInvoke({
    retryAttempts: 2,
    maxEventAge: Duration.hours(6),
    onFailure: sendOnlyDlq(pipeline.deadLetterQueue),
  });
}

/** S3 notifications of the input bucket's object events to `destination`. */
export function notify(
  bucket: s3.Bucket,
  s3Settings: S3Settings,
  destination: s3.IBucketNotificationDestination,
): void {
  const { objectKeyPrefix: prefix, objectKeySuffix: suffix } = s3Settings;
  const filters = prefix || suffix ? [{ prefix, suffix }] : [];
  bucket.addEventNotification(s3.EventType.OBJECT_CREATED, destination, ...filters);
  if (s3Settings.includeRemovals)
    bucket.addEventNotification(s3.EventType.OBJECT_REMOVED, destination, ...filters);
}

/** The EventBridge rule for the input bucket's object events (`s3-eventbridge`). */
export function objectEventsRule(
  pipeline: PipelineParts,
  bucket: s3.Bucket,
  s3Settings: S3Settings,
): events.Rule {
  const key = keyMatcher(s3Settings.objectKeyPrefix, s3Settings.objectKeySuffix);
  const rule = new events.Rule(pipeline, "Rule", {
    description: `effectively-once pipeline ${pipeline.pipelineName}: object events of the input bucket`,
    eventPattern: {
      source: ["aws.s3"],
      detailType: s3Settings.includeRemovals ? ["Object Created", "Object Deleted"] : ["Object Created"],
      detail: { bucket: { name: [bucket.bucketName] }, ...(key ? { object: { key } } : {}) },
    },
  });
  // Events EventBridge cannot hand to Lambda (throttled for 24 h, permission lost) go to the DLQ too.
  rule.addTarget(
    new targets.LambdaFunction(pipeline.function, {
      deadLetterQueue: pipeline.deadLetterQueue,
      retryAttempts: 185,
      maxEventAge: Duration.hours(24),
    }),
  );
  return rule;
}

/** The source queue (`s3-sqs`, `sqs`), redriving to the DLQ, polled by the function. */
export function sourceQueue(pipeline: PipelineParts, q: QueueSettings): sqs.Queue {
  const queue = new sqs.Queue(pipeline, "Queue", {
    fifo: q.fifo || undefined,
    visibilityTimeout: Duration.seconds(q.visibilityTimeoutSeconds),
    retentionPeriod: Duration.days(4),
    deadLetterQueue: { queue: pipeline.deadLetterQueue, maxReceiveCount: q.maxReceiveCount },
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
  queue.grant(pipeline.role, ...QUEUE_CONSUMER_ACTIONS);
  pipeline.function.addEventSourceMapping("QueueSource", {
    eventSourceArn: queue.queueArn,
    batchSize: q.batchSize,
    maxBatchingWindow: q.maxBatchingWindowSeconds ? Duration.seconds(q.maxBatchingWindowSeconds) : undefined,
    maxConcurrency: q.maxConcurrency,
    // The adapters fail single records, not the batch: the others are not redelivered.
    reportBatchItemFailures: true,
  });
  return queue;
}

/** The stream deliveries: the function polls the Kinesis stream's shards. */
export function kinesisSource(pipeline: PipelineParts, stream: kinesis.IStream, s: StreamSettings): void {
  // Grants the mapping's reads on this stream (and its key's Decrypt when it has a customer key).
  pipeline.function.addEventSource(
    new sources.KinesisEventSource(stream, streamSourceProps(s, pipeline.deadLetterQueue)),
  );
}

/** The stream deliveries: the function polls the table's stream. */
export function dynamoDBStreamSource(
  pipeline: PipelineParts,
  table: dynamodb.ITable,
  s: StreamSettings,
): void {
  // Grants the mapping's reads on this table's stream, and dynamodb:ListStreams (which has no resource: `*`).
  pipeline.function.addEventSource(
    new sources.DynamoEventSource(table, streamSourceProps(s, pipeline.deadLetterQueue)),
  );
}

/**
 * The safe stream mapping, the same for both streams:
 * - TRIM_HORIZON: LATEST would skip every record written before the mapping was created (or re-created);
 * - reportBatchItemFailures: the wrappers name the first failed record; the ones before it are not re-run;
 * - bisectBatchOnError: a batch that fails as a whole (timeout, crash) is split to isolate the poison record;
 * - retryAttempts and maxRecordAge bounded: with -1 (infinite) a poison record blocks its shard until the stream
 *   trims it, and then it is gone without a trace;
 * - on failure the DLQ gets the failed batch's shard and sequence numbers (the records stay in the stream);
 * - no tumblingWindow: the stream wrappers refuse windowed events.
 * The outbox relay's mapping is this one too (outbox.ts).
 */
export function streamSourceProps(
  s: Omit<StreamSettings, "iteratorAgeAlarmSeconds">,
  deadLetterQueue: sqs.IQueue,
): sources.StreamEventSourceProps {
  return {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: s.batchSize,
    maxBatchingWindow: s.maxBatchingWindowSeconds ? Duration.seconds(s.maxBatchingWindowSeconds) : undefined,
    parallelizationFactor: s.parallelizationFactor,
    retryAttempts: s.retryAttempts,
    maxRecordAge: Duration.seconds(s.maxRecordAgeSeconds),
    bisectBatchOnError: true,
    reportBatchItemFailures: true,
    onFailure: sendOnlyDlq(deadLetterQueue),
  };
}

/**
 * The DLQ as an on-failure destination, of async invokes and of stream mappings alike, granting only SendMessage (the
 * stock SqsDestination and SqsDlq also grant GetQueueAttributes/Url).
 */
function sendOnlyDlq(dlq: sqs.IQueue): lambda.IDestination & lambda.IEventSourceDlq {
  return {
    bind: (_mapping, fn) => {
      dlq.grant(fn, "sqs:SendMessage");
      return { destination: dlq.queueArn };
    },
  };
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
