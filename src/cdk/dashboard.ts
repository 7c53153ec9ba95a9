import { Duration, Stack, Token } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import { countersOf } from "../core/outcomes.js";
import { iteratorAge } from "./alarms.js";
import { HANDLER_DURATION_METRIC, type PipelineMetric, RECEIVE_COUNT_METRIC } from "./metrics.js";
import type { PipelineParts } from "./pipeline-parts.js";
import { CLEAN_STATUSES, GUARD_PROBLEM_STATUSES, INPUT_PROBLEM_STATUSES, queryString } from "./queries.js";
import type { ResolvedProps } from "./resolve-props.js";

/** The pipeline's dashboard: outcomes, redeliveries, queues, the function, the alarms and the latest skips. */
export function createDashboard(pipeline: PipelineParts, p: ResolvedProps): cloudwatch.Dashboard {
  const stackName = Stack.of(pipeline).stackName;
  const dashboard = new cloudwatch.Dashboard(pipeline, "Dashboard", {
    dashboardName: Token.isUnresolved(stackName) ? undefined : `${stackName}-${p.pipelineName}`.slice(0, 255),
    defaultInterval: Duration.hours(3),
  });
  dashboard.addWidgets(
    new cloudwatch.TextWidget({
      markdown:
        `## effectively-once: ${p.pipelineName} (${p.delivery})\n` +
        "Every delivery ends as one of: **processed** (the handler ran, committed once), **duplicate** " +
        "(already done: acknowledged), **stale** (a newer event of the subject won: skipped), " +
        "**failed** (retried, then dead-lettered). Log lines carry `status` and `correlation_id`.",
      width: 24,
      height: 2,
    }),
  );
  dashboard.addWidgets(...outcomeWidgets(pipeline));
  dashboard.addWidgets(...deliveryWidgets(pipeline));
  if (pipeline.alarms.iteratorAge) {
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Iterator age (ms, max): how far the function is behind the stream",
        left: [iteratorAge(pipeline).with({ label: "iterator age" })],
        leftAnnotations: [pipeline.alarms.iteratorAge.toAnnotation()],
        width: 24,
      }),
    );
  }
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: "Function",
      left: [
        pipeline.function.metricInvocations({ statistic: "Sum" }),
        pipeline.function.metricErrors({ statistic: "Sum" }),
        pipeline.function.metricThrottles({ statistic: "Sum" }),
      ],
      right: [pipeline.function.metricDuration({ statistic: "p99", label: "duration p99" })],
      width: 12,
    }),
    new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: Object.values(pipeline.alarms), width: 12 }),
  );
  dashboard.addWidgets(
    new cloudwatch.LogQueryWidget({
      title: "Latest duplicate and stale deliveries",
      logGroupNames: [pipeline.logGroup.logGroupName],
      queryString: queryString("skipped").toString(),
      width: 24,
      height: 6,
    }),
  );
  return dashboard;
}

/** Counters of the outcome table: the clean ends, and the ends that need attention. */
function outcomeWidgets(pipeline: PipelineParts): cloudwatch.IWidget[] {
  const sums = (names: PipelineMetric[]) => names.map((n) => pipeline.metric(n, { label: n }));
  return [
    new cloudwatch.GraphWidget({
      title: "Deliveries (sum / 5 min)",
      // superseded: a clean claim taken from a live older run (a counter, not an outcome).
      left: sums([...countersOf(CLEAN_STATUSES), "superseded"]),
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: "Needs attention (sum / 5 min)",
      // tookOver: a claim taken from an expired lease, a crashed or frozen run (a counter, not an outcome).
      left: sums([...countersOf(GUARD_PROBLEM_STATUSES), "tookOver", ...countersOf(INPUT_PROBLEM_STATUSES)]),
      width: 12,
    }),
  ];
}

/** Redeliveries, the handler's duration and the queues. */
function deliveryWidgets(pipeline: PipelineParts): cloudwatch.IWidget[] {
  const queueMetrics: cloudwatch.IMetric[] = [
    pipeline.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
      label: "dead letters",
      statistic: "Maximum",
    }),
  ];
  if (pipeline.queue) {
    queueMetrics.push(
      pipeline.queue.metricApproximateNumberOfMessagesVisible({ label: "waiting", statistic: "Maximum" }),
      pipeline.queue.metricApproximateNumberOfMessagesNotVisible({
        label: "in flight",
        statistic: "Maximum",
      }),
    );
  }
  // [statistic, label] pairs of one value metric.
  const statistics = (title: string, name: PipelineMetric, pairs: [string, string][]) =>
    new cloudwatch.GraphWidget({
      title,
      left: pairs.map(([statistic, label]) => pipeline.metric(name, { statistic, label })),
      width: 8,
    });
  return [
    statistics("Receive count (redeliveries)", RECEIVE_COUNT_METRIC, [
      ["Maximum", "max"],
      ["Average", "avg"],
    ]),
    statistics("Handler duration (ms)", HANDLER_DURATION_METRIC, [
      ["p50", "p50"],
      ["p99", "p99"],
    ]),
    new cloudwatch.GraphWidget({ title: "Queues", left: queueMetrics, width: 8 }),
  ];
}
