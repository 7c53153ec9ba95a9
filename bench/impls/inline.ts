import { type BusyPolicy, createGuard, type GuardOutcomeStatus } from "../../src/core/guard.js";
import { isAcknowledged } from "../../src/core/outcomes.js";
import { InlineDynamoDBStore } from "../../src/stores/dynamodb/inline.js";
import type { BenchEvent } from "../events.js";
import { createTable, dropTables } from "../tables.js";
import { type DeliveryResult, effectItem, type Implementation, newStats, runHandler } from "./types.js";

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

/** The effect's attributes (the row's key is the subject) and its position, as the other implementations write. */
function rowOf(event: BenchEvent): Record<string, unknown> {
  const { pk: _key, ...attributes } = effectItem(event);
  return { ...attributes, srcPos: event.position };
}

function acknowledge(status: GuardOutcomeStatus): DeliveryResult {
  return { outcome: status, ack: isAcknowledged(status) };
}
