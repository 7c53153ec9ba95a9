import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";

/** The pipeline's alarms (alarms.ts makes them, the dashboard shows them). */
export interface PipelineAlarms {
  /** Messages in the dead-letter queue: deliveries that exhausted their retries. */
  readonly deadLetters: cloudwatch.Alarm;
  /** A run finished after its claim was taken over (lease too short for the handler?). */
  readonly leaseLost: cloudwatch.Alarm;
  /** Deliveries that failed (they are retried, then dead-lettered). */
  readonly failed: cloudwatch.Alarm;
  /** Invocations that failed as a whole (timeout, crash outside the per-record guard). */
  readonly functionErrors: cloudwatch.Alarm;
  /**
   * The oldest record of the stream waits too long (Lambda's IteratorAge, maximum): a shard is stuck or the
   * function falls behind, and records will age out to the DLQ (stream deliveries only).
   */
  readonly iteratorAge?: cloudwatch.Alarm;
}
