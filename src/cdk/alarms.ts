import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import { OUTCOMES } from "../core/outcomes.js";
import type { EffectivelyOncePipeline } from "./pipeline.js";
import type { ResolvedProps } from "./resolve-props.js";

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

/** The pipeline's alarms: each fires (and recovers) to the alarm actions. */
export function createAlarms(pipeline: EffectivelyOncePipeline, p: ResolvedProps): PipelineAlarms {
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
  return {
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
  };
}
