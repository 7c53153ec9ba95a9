import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import { createTable, dropTables } from "../tables.js";
import { effectRow, type Implementation, newStats, runHandler } from "./types.js";

/** The handler and its effect (one plain PutItem), nothing else: the baseline for latency overhead. */
export const unguarded: Implementation = {
  name: "unguarded",
  description: "the handler's effect (a plain PutItem), no deduplication: the latency baseline",
  async open({ client, prefix }) {
    const out = `${prefix}-out`;
    await createTable(client, out);
    const stats = newStats();
    return {
      outputTable: out,
      stats,
      async deliver(event, plan) {
        await runHandler(stats, event, plan, () =>
          client.send(
            new PutItemCommand({
              TableName: out,
              Item: effectRow(event),
            }),
          ),
        );
        return { outcome: "processed", ack: true };
      },
      close: () => dropTables(client, [out]),
    };
  },
};

/** The ceiling: one bare conditional PutItem per event, no handler. */
export const rawWrite: Implementation = {
  name: "rawWrite",
  description: "a bare conditional PutItem (attribute_not_exists) per event: the write-rate ceiling",
  async open({ client, prefix }) {
    const out = `${prefix}-out`;
    await createTable(client, out);
    return {
      outputTable: out,
      stats: newStats(),
      async deliver(event) {
        await client.send(
          new PutItemCommand({
            TableName: out,
            Item: effectRow(event),
            ConditionExpression: "attribute_not_exists(pk)",
          }),
        );
        return { outcome: "processed", ack: true };
      },
      close: () => dropTables(client, [out]),
    };
  },
};
