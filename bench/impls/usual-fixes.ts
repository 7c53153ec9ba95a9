import { ConditionalCheckFailedException, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { createTable, dropTables } from "../tables.js";
import { effectRow, type Implementation, newStats, runHandler, SKIPPED } from "./types.js";

/*
 * The two fixes of the "records" articles (S3 → Lambda → DynamoDB): the record table is keyed by the
 * object key (the articles hash it: `id = md5(key)`; here `pk = bucket/key`), and the record is the effect.
 */

/** "Check if the item already exists" with GetItem, then PutItem. Racy: concurrent runs all see no item. */
export const getThenPut: Implementation = {
  name: "get-then-put",
  description: "GetItem on the record's id; PutItem if absent (the records article's first fix)",
  async open({ client, prefix }) {
    const out = `${prefix}-out`;
    await createTable(client, out);
    const stats = newStats();
    return {
      outputTable: out,
      stats,
      async deliver(event, plan) {
        // The article reads with the default (eventually consistent) GetItem.
        const existing = await client.send(
          new GetItemCommand({ TableName: out, Key: { pk: { S: event.subject } } }),
        );
        if (existing.Item) return { outcome: "duplicate", ack: true };
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

/** The "single atomic call": PutItem with `attribute_not_exists(id)`; a refusal is a skipped duplicate. */
export const conditionalPut: Implementation = {
  name: "conditional-put",
  description: "PutItem with ConditionExpression attribute_not_exists(id) (the records articles' atomic fix)",
  async open({ client, prefix }) {
    const out = `${prefix}-out`;
    await createTable(client, out);
    const stats = newStats();
    return {
      outputTable: out,
      stats,
      async deliver(event, plan) {
        const result = await runHandler(stats, event, plan, async () => {
          try {
            await client.send(
              new PutItemCommand({
                TableName: out,
                Item: effectRow(event),
                ConditionExpression: "attribute_not_exists(pk)",
              }),
            );
            return undefined;
          } catch (error) {
            if (error instanceof ConditionalCheckFailedException) return SKIPPED;
            throw error;
          }
        });
        return { outcome: result.skipped ? "duplicate" : "processed", ack: true };
      },
      close: () => dropTables(client, [out]),
    };
  },
};
