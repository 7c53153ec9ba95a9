import { type BusyPolicy, createGuard } from "../../src/core/guard.js";
import { DynamoDBFencedSink } from "../../src/sinks/dynamodb.js";
import { createStateTable } from "../../src/stores/dynamodb/schema.js";
import { DynamoDBStore } from "../../src/stores/dynamodb/store.js";
import { createTable, dropTables } from "../tables.js";
import { type DeliveryResult, effectItem, type Implementation, newStats, runHandler } from "./types.js";

export interface OursOptions {
  busy: BusyPolicy;
  /** true: the effect is folded into the commit (`sink.putAtCommit`); false: a separate fenced `sink.put`. */
  atomic: boolean;
}

/** effectively-once: the guard with the DynamoDB store, the effect through the fenced DynamoDB sink. */
export function ours(name: string, options: OursOptions): Implementation {
  return {
    name,
    description: options.atomic
      ? `guard (busy: ${options.busy}), effect folded into the commit (sink.putAtCommit → TransactWriteItems)`
      : `guard (busy: ${options.busy}), effect as a separate fenced sink.put`,
    async open({ client, prefix }) {
      const stateTable = `${prefix}-state`;
      const out = `${prefix}-out`;
      await createStateTable(client, { tableName: stateTable });
      await createTable(client, out);
      const stats = newStats();
      const store = new DynamoDBStore({ client, tableName: stateTable });
      const sink = new DynamoDBFencedSink({ client, tableName: out });
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
          const outcome = await guard.run(
            { subject: event.subject, identity: event.identity, position: event.position },
            (ctx) =>
              runHandler(stats, event, plan, () =>
                options.atomic ? sink.putAtCommit(ctx, effectItem(event)) : sink.put(ctx, effectItem(event)),
              ),
          );
          switch (outcome.status) {
            case "processed":
            case "duplicate":
            case "stale":
            case "lease-lost":
              return { outcome: outcome.status, ack: true };
            default:
              return { outcome: outcome.status, ack: false };
          }
        },
        close: () => dropTables(client, [stateTable, out]),
      };
    },
  };
}
