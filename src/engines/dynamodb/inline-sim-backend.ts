import { GetItemCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { INLINE_RESERVED_PREFIX } from "../../core/inline-prefix.js";
import { stateKey } from "../../core/state-key.js";
import type { Backend, EffectTarget } from "../../sim/backend.js";
import type { TaggedWrite } from "../../sim/faulty-store.js";
import { FORGOTTEN_NAMES, InlineDynamoDBStore } from "./inline-store.js";
import { dynamoItemBytes } from "./limits.js";
import { type DynamoDBTables, historyOutbox } from "./sim-backend.js";

/** The user's attributes of a subject's row that the simulator writes: the sink, and one counter per application. */
const SINK_POS = "sinkPos";
const SINK_FENCE = "sinkFence";
const COUNT_PREFIX = "count.";

/**
 * Inline state (`InlineDynamoDBStore`): the guard's state lives as `eo_*` attributes in the user's own row, and
 * the only effect it folds is that row's write. So both effects live in the event's row: the sink is the subject's
 * row (`sinkPos`, `sinkFence`), and the counter is an attribute per application, `count.<counter id>.<fence>`
 * (a row write can only set values, so an increment would hide a second application; a fence is never handed out
 * twice, and one fence commits at most once, so every application leaves its own attribute). A direct sink write is
 * `putRow`: applied only while the claim's fence holds. On DynamoDB Local, in the DynamoDB run's own table.
 */
export function inlineBackend(t: DynamoDBTables, rowKey?: (stateKey: string) => string): Backend {
  const store = new InlineDynamoDBStore({
    client: t.client,
    tableName: t.inline,
    ...(rowKey ? { rowKey } : {}),
  });
  const rowOf = async (key: string) =>
    (
      await t.client.send(
        new GetItemCommand({
          TableName: t.inline,
          Key: { pk: { S: store.rowKeyOf(key) } },
          ConsistentRead: true,
        }),
      )
    ).Item ?? {};
  const counterAttribute = (e: EffectTarget) => `${COUNT_PREFIX}${e.counterId}.`;
  const ctx = (e: EffectTarget, fence: number) => ({ stateKey: e.key, fence });
  return {
    name: "dynamodb-inline",
    store,
    sinkReportsItself: false,
    counter: (e, fence) => store.row(ctx(e, fence), { [`${counterAttribute(e)}${fence}`]: 1 }),
    // The store folds only writes it made itself: the tag goes onto that very object.
    sinkAtomic: (e, pos, fence): TaggedWrite =>
      Object.assign(store.row(ctx(e, fence), { [SINK_POS]: pos, [SINK_FENCE]: fence }), {
        chaos: { subject: e.subject, pos, fence },
      }),
    sinkPut: (e, pos, fence) => store.putRow(ctx(e, fence), { [SINK_POS]: pos, [SINK_FENCE]: fence }),
    readCounter: async (e) => {
      const prefix = counterAttribute(e);
      const fences = Object.keys(await rowOf(e.key))
        .filter((name) => name.startsWith(prefix))
        .map((name) => Number(name.slice(prefix.length)));
      return { count: fences.length, fences };
    },
    readSink: async (subject) => {
      const row = await rowOf(stateKey(subject, "", true));
      return row[SINK_POS]?.S !== undefined
        ? { pos: row[SINK_POS].S, fence: Number(row[SINK_FENCE]?.N) }
        : undefined;
    },
    // The state's size is that of its `eo_*` attributes: the user's row around it is the user's.
    readState: async (key) => {
      const row = await rowOf(key);
      const own = Object.fromEntries(
        Object.entries(row).filter(([k]) => k.startsWith(INLINE_RESERVED_PREFIX)),
      );
      const state = await store.read(key);
      return { state, bytes: state ? dynamoItemBytes(own) : undefined };
    },
    forget: (key) => removeState(t, store.rowKeyOf(key)),
    outbox: () => historyOutbox(t, "dynamodb-inline"),
  };
}

/**
 * The state goes, the user's attributes and the row write's stamp stay, as the operator's forget leaves them
 * (`FORGOTTEN_NAMES`): the stamp describes the row, as a fenced sink's stamp does beside a state table, which TTL
 * leaves too. (A real TTL on `eo_exp` would delete the whole row: docs/inline-state.md, "No TTL by default".)
 */
async function removeState(t: DynamoDBTables, row: string): Promise<void> {
  const names = Object.fromEntries(Object.values(FORGOTTEN_NAMES).map((a, i) => [`#a${i}`, a]));
  await t.client.send(
    new UpdateItemCommand({
      TableName: t.inline,
      Key: { pk: { S: row } },
      UpdateExpression: `REMOVE ${Object.keys(names).join(", ")}`,
      ExpressionAttributeNames: names,
    }),
  );
}
