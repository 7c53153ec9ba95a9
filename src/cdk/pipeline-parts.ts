import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as kinesis from "aws-cdk-lib/aws-kinesis";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as logs from "aws-cdk-lib/aws-logs";
import type * as s3 from "aws-cdk-lib/aws-s3";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import type { PipelineMetric } from "./metrics.js";
import type { PipelineAlarms } from "./pipeline-alarms.js";

/**
 * The construct (`EffectivelyOncePipeline`, pipeline.ts) as the files it calls see it: the scope of what they
 * create and the resources made before them. They take this rather than the class, so none imports pipeline.ts.
 */
export interface PipelineParts extends Construct {
  readonly pipelineName: string;
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly stateTable?: dynamodb.Table;
  readonly recordsTable?: dynamodb.Table;
  readonly inputBucket?: s3.Bucket;
  readonly outputBucket?: s3.Bucket;
  readonly queue?: sqs.Queue;
  readonly stream?: kinesis.IStream;
  readonly sourceTable?: dynamodb.ITable;
  readonly deadLetterQueue: sqs.Queue;
  readonly alarms: PipelineAlarms;
  readonly outbox?: PipelineOutbox;
  metric(name: PipelineMetric, props?: cloudwatch.MetricOptions): cloudwatch.Metric;
}

/** The outbox a pipeline made (outbox.ts, the `outbox` prop). */
export interface PipelineOutbox {
  readonly table: dynamodb.Table;
  readonly relay: lambda.Function;
  readonly relayRole: iam.Role;
  /** Where the relay's stream mapping sends the batches it gives up on. */
  readonly relayDeadLetterQueue: sqs.IQueue;
}
