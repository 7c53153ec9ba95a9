import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type BusyPolicy, createGuard, type GuardOutcomeStatus } from "../../src/core/guard.js";
import { isAcknowledged } from "../../src/core/outcomes.js";
import { createStateTable } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { createTable, dropTables } from "../tables.js";
import { type DeliveryResult, effectItem, type Implementation, newStats, runHandler } from "./types.js";

export interface OursOptions {
  busy: BusyPolicy;
  /** true: the effect is folded into the commit (`sink.putAtCommit`); false: a separate fenced `sink.put`. */
  atomic: boolean;
}

/** effectively-once: the guard (`guard.run`: claim, handler under a lease, commit) with the DynamoDB store. */
export function ours(name: string, options: OursOptions): Implementation {
  return {
    name,
    description: options.atomic
      ? `guard.run (busy: ${options.busy}), effect folded into the commit (sink.putAtCommit → TransactWriteItems)`
      : `guard.run (busy: ${options.busy}), effect as a separate fenced sink.put`,
    async open({ client, prefix }) {
      const { stateTable, out, stats, sink, guard } = await openGuarded(client, prefix, options.busy);
      return {
        outputTable: out,
        stats,
        async deliver(event, plan): Promise<DeliveryResult> {
          const outcome = await guard.run(
            { subject: event.subject, identity: event.identity, position: event.position },
            (ctx) =>
              runHandler(stats, event, plan, () =>
                options.atomic ? sink.putAtCommit(ctx, effectItem(event)) : sink.put(ctx, effectItem(event)),
              ),
          );
          return acknowledge(outcome.status);
        },
        close: () => dropTables(client, [stateTable, out]),
      };
    },
  };
}

/**
 * effectively-once, one request per event: `guard.apply`. The same handler computes the effect first (work, then
 * `ctx.atCommit(sink.atomicPut(ctx, item))`), then claim, effect and commit go in one TransactWriteItems. The
 * handler runs before the claim, so it also runs for duplicates and stale versions (their writes are dropped).
 */
export function oursApply(name: string, options: { busy: BusyPolicy }): Implementation {
  return {
    name,
    description: `guard.apply (busy: ${options.busy}): compute, then claim + effect (ctx.atCommit(sink.atomicPut)) + commit in one TransactWriteItems`,
    async open({ client, prefix }) {
      const { stateTable, out, stats, sink, guard } = await openGuarded(client, prefix, options.busy);
      return {
        outputTable: out,
        stats,
        async deliver(event, plan): Promise<DeliveryResult> {
          const outcome = await guard.apply(
            { subject: event.subject, identity: event.identity, position: event.position },
            (ctx) =>
              runHandler(stats, event, plan, () => ctx.atCommit(sink.atomicPut(ctx, effectItem(event)))),
          );
          return acknowledge(outcome.status);
        },
        close: () => dropTables(client, [stateTable, out]),
      };
    },
  };
}

/** The state table, the output table and its fenced sink, and a guard that sums its waiting into the stats. */
async function openGuarded(client: DynamoDBClient, prefix: string, busy: BusyPolicy) {
  const stateTable = `${prefix}-state`;
  const out = `${prefix}-out`;
  await createStateTable(client, { tableName: stateTable });
  await createTable(client, out);
  const stats = newStats();
  const store = new DynamoDBStore({ client, tableName: stateTable });
  const sink = new DynamoDBFencedSink({ client, tableName: out });
  const guard = createGuard({
    store,
    busy,
    onEvent: (trace) => {
      if (trace.type === "waiting") stats.waitMs += trace.delayMs;
    },
  });
  return { stateTable, out, stats, sink, guard };
}

/** Acknowledged as the guard's outcome table says (src/core/outcomes.ts); the rest are redelivered. */
function acknowledge(status: GuardOutcomeStatus): DeliveryResult {
  return { outcome: status, ack: isAcknowledged(status) };
}
