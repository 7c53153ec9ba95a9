import {
  type AttributeValue,
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { createTable, dropTables } from "../tables.js";
import { type DeliveryResult, effectRow, type Implementation, newStats, runHandler, sleep } from "./types.js";

/** Give up after the Lambda timeout (the sample loops until the function times out). */
const FUNCTION_TIMEOUT_MS = 30_000;

/**
 * RE-IMPLEMENTATION, in TypeScript, of the algorithm of the AWS Storage Blog sample "Manage event ordering
 * and duplicate events with Amazon S3 Event Notifications" (aws-samples/amazon-s3-endedupe), from its
 * description: one lock item per object key holding the newest sequencer and a lock status.
 *
 *   loop:
 *     GetItem (consistent)            locked → back off (random 0–1 s), loop
 *     stored sequencer ≥ ours         → skip (duplicate or out of date)
 *     PutItem lock with our sequencer, conditional on (no item) or (same old sequencer and unlocked)
 *                                     refused → back off, loop
 *     process (the effect: a plain PutItem, the sample uploads its output unconditionally)
 *     UpdateItem unlock               (on failure: unlock and roll the sequencer back, then rethrow)
 *
 * Faithful to the sample: plain string comparison of sequencers (ours all have 16 digits, so it is correct
 * here), no lease (a crashed run leaves the key locked), busy-waiting inside the invocation. The lock item
 * is keyed by `bucket/key` as the blog describes (the sample's code appends `#versionId`).
 */
export const sequencerLock: Implementation = {
  name: "sequencer-lock",
  description:
    "re-implementation of the AWS Storage Blog sample's sequencer lock (get, lock put, process, unlock)",
  async open({ client, prefix }) {
    const lockTable = `${prefix}-lock`;
    const out = `${prefix}-out`;
    await createTable(client, lockTable);
    await createTable(client, out);
    const stats = newStats();
    const LOCKED = "locked";
    const UNLOCKED = "";

    const lockFor = async (key: string, oldSequencer: string | undefined, sequencer: string, me: string) => {
      try {
        await client.send(
          new PutItemCommand({
            TableName: lockTable,
            Item: marshall({ pk: key, sequencer, lock_status: LOCKED, updated_by: me }),
            ConditionExpression: "attribute_not_exists(pk) OR (#seq = :old AND lock_status = :unlocked)",
            ExpressionAttributeNames: { "#seq": "sequencer" },
            ExpressionAttributeValues: { ":old": seqValue(oldSequencer), ":unlocked": { S: UNLOCKED } },
          }),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    };
    const unlock = (key: string, me: string, rollBackTo?: { sequencer: string | undefined }) =>
      client.send(
        new UpdateItemCommand({
          TableName: lockTable,
          Key: { pk: { S: key } },
          UpdateExpression: rollBackTo
            ? "SET lock_status = :unlocked, updated_by = :me, #seq = :seq"
            : "SET lock_status = :unlocked, updated_by = :me",
          ...(rollBackTo ? { ExpressionAttributeNames: { "#seq": "sequencer" } } : {}),
          ExpressionAttributeValues: {
            ":unlocked": { S: UNLOCKED },
            ":me": { S: me },
            ...(rollBackTo ? { ":seq": seqValue(rollBackTo.sequencer) } : {}),
          },
        }),
      );
    const backOff = async () => {
      const ms = Math.random() * 1000;
      stats.waitMs += ms;
      await sleep(ms);
    };

    return {
      outputTable: out,
      stats,
      async deliver(event, plan): Promise<DeliveryResult> {
        const me = Math.random().toString(36).slice(2);
        const deadline = Date.now() + FUNCTION_TIMEOUT_MS;
        while (Date.now() < deadline) {
          const got = await client.send(
            new GetItemCommand({
              TableName: lockTable,
              Key: { pk: { S: event.subject } },
              ConsistentRead: true,
            }),
          );
          if (got.Item?.lock_status?.S) {
            await backOff();
            continue;
          }
          const old = got.Item?.sequencer?.S;
          if (old !== undefined && !(old < event.sequencer)) {
            return { outcome: old === event.sequencer ? "duplicate" : "stale", ack: true };
          }
          if (!(await lockFor(event.subject, old, event.sequencer, me))) {
            await backOff();
            continue;
          }
          try {
            await runHandler(stats, event, plan, () =>
              client.send(
                new PutItemCommand({
                  TableName: out,
                  Item: effectRow(event),
                }),
              ),
            );
          } catch (error) {
            await unlock(event.subject, me, { sequencer: old });
            throw error;
          }
          await unlock(event.subject, me);
          return { outcome: "processed", ack: true };
        }
        return { outcome: "busy", ack: false };
      },
      close: () => dropTables(client, [lockTable, out]),
    };
  },
};

/** The sample passes Python `None` for "no sequencer yet": DynamoDB's NULL. */
function seqValue(sequencer: string | undefined): AttributeValue {
  return sequencer === undefined ? { NULL: true } : { S: sequencer };
}
