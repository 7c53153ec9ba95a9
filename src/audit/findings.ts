export type Severity = "error" | "warning";

export interface Finding {
  rule: RuleId;
  severity: Severity;
  /** The logical id of the resource to change. */
  resource: string;
  /** What was found, with this template's numbers and names. */
  message: string;
  why: string;
  fix: string;
}

interface RuleInfo {
  severity: Severity;
  why: string;
  fix: string;
}

/** Every rule: its severity and the why and fix printed with each finding (docs/cli-audit-template.md). */
export const RULES = {
  "sqs-visibility-6x": {
    severity: "error",
    why: "AWS asks for a queue visibility timeout of at least 6 × the function timeout: a batch held back by throttling or retries reappears in the queue while it is still being processed, and a second invocation runs the same messages again.",
    fix: "Set the queue's VisibilityTimeout to at least 6 × the function's Timeout (or lower the Timeout).",
  },
  "sqs-visibility-1.3x": {
    severity: "error",
    why: "Under 1.3 × the function timeout a message becomes visible again before a slow invocation has even finished: the same message is processed twice at the same time, so its effects run twice and can land out of order.",
    fix: "Set the queue's VisibilityTimeout to at least 6 × the function's Timeout (which also clears sqs-visibility-6x).",
  },
  "sqs-no-dlq": {
    severity: "error",
    why: "Without a redrive policy a message that always fails (a poison message) is received again until its retention ends: it blocks a FIFO group, keeps re-running its partial effects, and is then dropped without a trace.",
    fix: "Add a RedrivePolicy with a deadLetterTargetArn (a dead-letter queue) and maxReceiveCount ≥ 5.",
  },
  "sqs-max-receive-count": {
    severity: "error",
    why: "Lambda's poller counts throttled and timed-out receives too: under 5 receives a healthy message can be dead-lettered by a burst of throttling, and is then never processed.",
    fix: "Set RedrivePolicy.maxReceiveCount to 5 or more.",
  },
  "batch-item-failures": {
    severity: "error",
    why: "Without ReportBatchItemFailures one failed record fails the whole batch: every record in it is delivered again, so the records that had succeeded run their effects a second time (and a stream batch stalls its shard).",
    fix: "Add ReportBatchItemFailures to the mapping's FunctionResponseTypes and return batchItemFailures from the handler (the effectively-once adapters do).",
  },
  "stream-bisect": {
    severity: "error",
    why: "When an invocation fails as a whole (a timeout, a crash before the handler answers) no item failure is reported: without BisectBatchOnFunctionError the whole batch is retried until its retries run out, and then every record of it goes to the on-failure destination, the good ones with the poison one.",
    fix: "Set BisectBatchOnFunctionError: true: a failing batch is split in halves until the poison record is alone.",
  },
  "stream-unbounded-retries": {
    severity: "error",
    why: "A stream's shard is read in order: with MaximumRetryAttempts -1 (the default) a record that always fails is retried until the stream trims it (24 h to a year), and every later record of its shard waits behind it.",
    fix: "Set MaximumRetryAttempts to a bound (the construct's default is 10) and an on-failure destination for what exhausts it.",
  },
  "stream-unbounded-record-age": {
    severity: "error",
    why: "With MaximumRecordAgeInSeconds -1 (the default) a record is retried until the stream trims it: a shard stuck for longer than the retention loses the record without a trace (the on-failure destination is never told).",
    fix: "Set MaximumRecordAgeInSeconds under the stream's retention (the construct's default: 1 day for Kinesis, 12 hours for DynamoDB streams), with an on-failure destination.",
  },
  "stream-no-on-failure": {
    severity: "error",
    why: "A stream batch that exhausts its retries or its record age is skipped: without DestinationConfig.OnFailure nothing records which records were skipped, and they are lost silently.",
    fix: "Add DestinationConfig.OnFailure with a Destination (an SQS queue or SNS topic; it receives the batch's shard and sequence numbers, read the records from the stream before its retention ends).",
  },
  "stream-starting-latest": {
    severity: "warning",
    why: "StartingPosition LATEST reads only what is written after the mapping starts: records written before it was created, or while it is re-created (a replacement on deploy), are never processed. A template cannot show whether that is meant.",
    fix: "Use StartingPosition: TRIM_HORIZON (the guard drops the records already processed), or AT_TIMESTAMP when an earlier start is meant.",
  },
  "stream-tumbling-window": {
    severity: "error",
    why: "With TumblingWindowInSeconds Lambda carries state between invocations of a window and expects it back: the effectively-once stream wrappers refuse windowed events, so every batch fails and is retried, then skipped.",
    fix: "Remove TumblingWindowInSeconds (aggregate in the handler's own store, under the guard), or keep this function out of the stream wrappers.",
  },
  "fifo-content-dedup": {
    severity: "warning",
    why: "A FIFO queue drops a resent message only by its deduplication id: without ContentBasedDeduplication every producer must set MessageDeduplicationId itself, or a producer retry is delivered twice. The template cannot show what the producers send.",
    fix: "Set ContentBasedDeduplication: true, or make sure every producer sets a MessageDeduplicationId derived from the message.",
  },
  "s3-no-guard-table": {
    severity: "error",
    why: "S3 delivers each event at least once and not in order: without a guard's state table nothing in the stack drops the duplicates or the stale events, so effects run twice or an older version overwrites a newer one.",
    fix: "Add a guard state table (DynamoDB, single string partition key pk, TTL on expiresAt, e.g. the EffectivelyOncePipeline construct) and guard the handler.",
  },
  "hand-made-lock-table": {
    severity: "error",
    why: "A lock the handler keeps in its own table drops a duplicate only while its holder is alive and on time: a holder that crashes keeps the lock until something frees it, and a holder that stalls past its lock is not stopped from writing after a newer holder took over unless it renews a lease and its write checks a fencing token. A template shows only the TTL: the lease, the fencing and any comparison of S3 sequencers (which keeps an older event from being applied after a newer one) are in the handler's code.",
    fix: "Guard the handler with a guard state table (EffectivelyOncePipeline: a lease, a fence checked at the commit, the S3 sequencer's order, TTL on expiresAt); or keep the lock and add TimeToLiveSpecification, a lease the holder renews and a fencing token its write checks. If the table is no lock, tag it eonce:role: records (s3-no-guard-table is then reported instead).",
  },
  "async-no-on-failure": {
    severity: "error",
    why: "An asynchronous invoke (S3, SNS, EventBridge) that fails its retries is discarded: without an on-failure destination or a dead-letter queue the event is lost silently.",
    fix: "Add an AWS::Lambda::EventInvokeConfig with DestinationConfig.OnFailure (an SQS queue), or a DeadLetterConfig on the function.",
  },
  "state-table-no-ttl": {
    severity: "warning",
    why: "The guard writes expiresAt on every item so that finished items expire: without TTL on expiresAt the table keeps one item per subject forever and its cost only grows.",
    fix: "Set TimeToLiveSpecification: { AttributeName: expiresAt, Enabled: true } on the table.",
  },
  "eventbridge-target-no-dlq": {
    severity: "error",
    why: "EventBridge drops an event it cannot deliver to a target (throttled or denied past its retry policy): without a DeadLetterConfig the event is lost without a trace.",
    fix: "Add a DeadLetterConfig (an SQS queue) to the target, and a queue policy that lets events.amazonaws.com send to it.",
  },
  "unresolved-reference": {
    severity: "warning",
    why: "The reference depends on a parameter, an import or a resource outside this template: the checks that need it were not run, rather than guessed.",
    fix: "Audit the template with the referenced resource in it, or check the referenced resource by hand.",
  },
} as const satisfies Record<string, RuleInfo>;

export type RuleId = keyof typeof RULES;

export function finding(rule: RuleId, resource: string, message: string): Finding {
  const info: RuleInfo = RULES[rule];
  return { rule, severity: info.severity, resource, message, why: info.why, fix: info.fix };
}
