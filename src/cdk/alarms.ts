import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import { OUTCOMES } from "../core/outcomes.js";
import type { PipelineAlarms } from "./pipeline-alarms.js";
import type { PipelineParts } from "./pipeline-parts.js";
import type { ResolvedProps } from "./resolve-props.js";

/** The pipeline's alarms: each fires (and recovers) to the alarm actions. */
export function createAlarms(pipeline: PipelineParts, p: ResolvedProps): PipelineAlarms {
  const make = (id: string, description: string, metric: cloudwatch.IMetric, threshold: number) => {
    const alarm = new cloudwatch.Alarm(pipeline, id, {
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
  const stream = p.kinesis ?? p.dynamodb;
  return {
    // Also the stream mappings' on-failure messages: they go to the same queue.
    deadLetters: make(
      "DeadLettersAlarm",
      "deliveries in the dead-letter queue; inspect them, fix the cause, then redrive",
      pipeline.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: "Maximum",
      }),
      1,
    ),
    leaseLost: make(
      "LeaseLostAlarm",
      "a run lost its claim before committing (handler slower than the lease, or frozen)",
      pipeline.metric(OUTCOMES["lease-lost"].counter),
      1,
    ),
    failed: make(
      "FailedAlarm",
      "deliveries failed; they are retried, then dead-lettered",
      pipeline.metric(OUTCOMES.failed.counter),
      p.failedAlarmThreshold,
    ),
    functionErrors: make(
      "FunctionErrorsAlarm",
      "invocations failed as a whole (timeout or crash)",
      pipeline.function.metricErrors({ period: Duration.minutes(5), statistic: "Sum" }),
      1,
    ),
    ...(stream && {
      iteratorAge: make(
        "IteratorAgeAlarm",
        `the oldest stream record waited ${stream.iteratorAgeAlarmSeconds} s or more: a shard is stuck or the ` +
          `function falls behind; records older than ${stream.maxRecordAgeSeconds} s go to the DLQ unprocessed`,
        iteratorAge(pipeline),
        stream.iteratorAgeAlarmSeconds * 1000,
      ),
    }),
  };
}

/** Lambda's age of the last record of each batch, in milliseconds, at its worst (Maximum) per minute. */
export function iteratorAge(pipeline: PipelineParts): cloudwatch.Metric {
  return pipeline.function.metric("IteratorAge", { statistic: "Maximum", period: Duration.minutes(1) });
}
