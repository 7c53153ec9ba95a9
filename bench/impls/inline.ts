import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import type { Context } from "aws-lambda";
import { type BusyPolicy, createGuard, type GuardOutcomeStatus } from "../../src/core/guard.js";
import { GUARD_OUTCOME_STATUSES, isAcknowledged } from "../../src/core/outcomes.js";
import { InlineDynamoDBStore } from "../../src/engines/dynamodb/inline-store.js";
import {
  type ApplyEventHandler,
  DeliveryFailedError,
  s3Handler,
  type WrapperMode,
} from "../../src/lambda/index.js";
import { lambdaContext } from "../../test/kit/context.js";
import type { BenchEvent } from "../events.js";
import { createTable, dropTables } from "../tables.js";
import {
  type DeliveryResult,
  effectItem,
  type HandlerPlan,
  type Implementation,
  newStats,
  runHandler,
} from "./types.js";

/**
 * effectively-once with inline state (`InlineDynamoDBStore`): the guard's state lives in the effect's own row (one
 * per object key), so `apply` is one conditional UpdateItem (claim + row + commit) and `run` two plain UpdateItems
 * (claim, then commit with the row). No state table, no transaction.
 */
export function oursInline(
  name: string,
  options: { busy: BusyPolicy; mode: "apply" | "run" },
): Implementation {
  return {
    name,
    description:
      options.mode === "apply"
        ? `guard.apply (busy: ${options.busy}) on InlineDynamoDBStore: claim + row + commit in one UpdateItem`
        : `guard.run (busy: ${options.busy}) on InlineDynamoDBStore: claim, then commit with the row (2 UpdateItems)`,
    async open({ client, prefix }) {
      const out = `${prefix}-out`;
      await createTable(client, out);
      const stats = newStats();
      // Row key = subject (`o#<subject>` → `<subject>`): the output table's `pk`, as every implementation writes it.
      const store = new InlineDynamoDBStore({ client, tableName: out });
      const guard = createGuard({
        store,
        busy: options.busy,
        onEvent: (trace) => {
          if (trace.type === "waiting") stats.waitMs += trace.delayMs;
        },
      });
      return {
        outputTable: out,
        stats,
        async deliver(event, plan): Promise<DeliveryResult> {
          const ev = { subject: event.subject, identity: event.identity, position: event.position };
          const outcome =
            options.mode === "apply"
              ? await guard.apply(ev, (ctx) =>
                  runHandler(stats, event, plan, () => ctx.atCommit(store.row(ctx, rowOf(event)))),
                )
              : await guard.run(ev, (ctx) =>
                  runHandler(stats, event, plan, () => ctx.atCommit(store.row(ctx, rowOf(event)))),
                );
          return acknowledge(outcome.status);
        },
        close: () => dropTables(client, [out]),
      };
    },
  };
}

/**
 * The same inline store and handler through the Lambda wrapper (`s3Handler`, mode `apply` or `run`): each delivery is
 * an S3 notification parsed, observed (logs at level SILENT, metrics disabled: the wrapper's work without the
 * CloudWatch output) and answered as Lambda would get it. Beside `inline` / `inline-run`, the wrapper's own cost.
 */
export function oursInlineWrapper(name: string, options: { mode: WrapperMode }): Implementation {
  return {
    name,
    description: `s3Handler(handler, { store, mode: "${options.mode}" }) on InlineDynamoDBStore: the Lambda wrapper around guard.${options.mode}`,
    async open({ client, prefix }) {
      const out = `${prefix}-out`;
      await createTable(client, out);
      const stats = newStats();
      const store = new InlineDynamoDBStore({ client, tableName: out });
      // The harness's event and plan reach the handler through the delivery's own Lambda context.
      const jobs = new WeakMap<Context, { event: BenchEvent; plan: HandlerPlan }>();
      const compute: ApplyEventHandler = (_e, ctx) => {
        const job = jobs.get(ctx.lambdaContext as Context);
        if (!job) throw new Error("no bench job for this invocation");
        return runHandler(stats, job.event, job.plan, () => ctx.atCommit(store.row(ctx, rowOf(job.event))));
      };
      const quiet = quietObservability();
      const wrapped =
        options.mode === "apply"
          ? s3Handler(compute, { store, mode: "apply", ...quiet })
          : s3Handler(async (e, ctx) => compute(e, ctx), { store, ...quiet });
      return {
        outputTable: out,
        stats,
        async deliver(event, plan): Promise<DeliveryResult> {
          const context = lambdaContext();
          jobs.set(context, { event, plan });
          try {
            const report = await wrapped({ Records: [event.record] }, context);
            return acknowledge(guardStatus(report.deliveries[0]?.events[0]?.status));
          } catch (error) {
            // Lambda would retry the invocation: the record's status says why.
            if (!(error instanceof DeliveryFailedError)) throw error;
            return { outcome: guardStatus(error.failures[0]?.status), ack: false };
          }
        },
        close: () => dropTables(client, [out]),
      };
    },
  };
}

/** A silent Logger and a disabled Metrics instance (no output on the bench's stdout). */
export function quietObservability(): { logger: Logger; metrics: Metrics } {
  const saved = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = "true";
  try {
    return { logger: new Logger({ logLevel: "SILENT" }), metrics: new Metrics({ namespace: "eonce-bench" }) };
  } finally {
    if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
    else process.env.POWERTOOLS_METRICS_DISABLED = saved;
  }
}

/** The wrapper reports delivery statuses; the harness counts the guard's (anything else is a failure here). */
function guardStatus(status: string | undefined): GuardOutcomeStatus {
  return (GUARD_OUTCOME_STATUSES as readonly string[]).includes(status ?? "")
    ? (status as GuardOutcomeStatus)
    : "failed";
}

/** The effect's attributes (the row's key is the subject) and its position, as the other implementations write. */
export function rowOf(event: BenchEvent): Record<string, unknown> {
  const { pk: _key, ...attributes } = effectItem(event);
  return { ...attributes, srcPos: event.position };
}

function acknowledge(status: GuardOutcomeStatus): DeliveryResult {
  return { outcome: status, ack: isAcknowledged(status) };
}
