import * as logs from "aws-cdk-lib/aws-logs";
import { DELIVERY_STATUSES, type DeliveryStatus, OUTCOMES, type OutcomeInfo } from "../core/outcomes.js";
import type { PipelineParts } from "./pipeline-parts.js";

const statusesWhere = (holds: (o: OutcomeInfo) => boolean): DeliveryStatus[] =>
  DELIVERY_STATUSES.filter((s) => holds(OUTCOMES[s]));

/** The guard's clean ends (processed, duplicate, stale). */
export const CLEAN_STATUSES = statusesWhere((o) => o.from === "guard" && o.level === "info");
/** Clean ends that did not run the handler: acknowledged, nothing done. */
export const SKIPPED_STATUSES = CLEAN_STATUSES.filter((s) => s !== "processed");
/** The guard's ends worth a look: its errors first, then its warnings. */
export const GUARD_PROBLEM_STATUSES = [
  ...statusesWhere((o) => o.from === "guard" && o.level === "error"),
  ...statusesWhere((o) => o.from === "guard" && o.level === "warn"),
];
/** Input that is no event (decided before the guard runs). */
export const INPUT_PROBLEM_STATUSES = statusesWhere((o) => o.from === "delivery" && o.level === "error");

const statusIn = (statuses: readonly DeliveryStatus[]) =>
  `status in [${statuses.map((s) => `"${s}"`).join(", ")}]`;

/**
 * Logs Insights queries on the adapters' log lines (src/observe/observer.ts): one JSON object per line,
 * `status` is the delivery's outcome, `correlation_id` the delivery's id.
 */
export const LOG_QUERIES = {
  skipped: {
    fields: ["@timestamp", "status", "subject", "position", "current", "correlation_id", "message"],
    filter: statusIn(SKIPPED_STATUSES),
    sort: "@timestamp desc",
    limit: 200,
  },
  outcomes: {
    filter: "ispresent(status)",
    stats: "count(*) as deliveries by status, bin(5m)",
  },
  problems: {
    fields: ["@timestamp", "level", "status", "subject", "correlation_id", "message", "error.message"],
    filter: `${statusIn([...GUARD_PROBLEM_STATUSES, ...INPUT_PROBLEM_STATUSES])} or level = "ERROR"`,
    sort: "@timestamp desc",
    limit: 200,
  },
} as const;

type LogQuery = { fields?: readonly string[]; filter: string; stats?: string; sort?: string; limit?: number };

/** One of LOG_QUERIES as a Logs Insights query (the saved query and the dashboard widget read the same). */
export function queryString(name: keyof typeof LOG_QUERIES): logs.QueryString {
  const q: LogQuery = LOG_QUERIES[name];
  return new logs.QueryString({
    fields: q.fields && [...q.fields],
    filterStatements: [q.filter],
    statsStatements: q.stats === undefined ? undefined : [q.stats],
    sort: q.sort,
    limit: q.limit,
  });
}

/** Construct id and saved name of each query. */
const SAVED_AS = {
  skipped: ["SkippedQuery", "duplicate-and-stale"],
  outcomes: ["OutcomesQuery", "outcomes"],
  problems: ["ProblemsQuery", "problems"],
} as const;

/** The saved queries (CloudWatch console → Logs Insights → Saved queries), on the function's log group. */
export function createQueries(pipeline: PipelineParts): logs.QueryDefinition[] {
  return (Object.keys(SAVED_AS) as (keyof typeof SAVED_AS)[]).map((name) => {
    const [id, savedName] = SAVED_AS[name];
    return new logs.QueryDefinition(pipeline, id, {
      queryDefinitionName: `effectively-once/${pipeline.pipelineName}/${savedName}`,
      queryString: queryString(name),
      logGroups: [pipeline.logGroup],
    });
  });
}
