/**
 * DynamoDB Local's CPU per request for one conditional write shape: a raw conditional PutItem next to UpdateItems
 * that write the same row with the inline store's expressions (and shorter variants), sent straight through one
 * SDK client, interleaved, so that the server's per-request floor for each shape can be compared in one process.
 *
 * The "what if" shapes are not what any store sends: they bound what a different stored format could gain (a
 * conditional PutItem of the whole row with its state, which has no update expression to parse; fewer state
 * attributes with a shorter condition).
 *
 *   tsx bench/expression-cost.ts [--requests 3000] [--concurrency 8] [--rounds 3] [--shapes "raw|inline apply, the store"]
 */
import {
  type AttributeValue,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { Command } from "commander";
import { InlineDynamoDBStore } from "../src/engines/dynamodb/inline-store.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../src/local/aws-local.js";
import { startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { cpuMeter } from "./cpu.js";
import { makeEvent } from "./events.js";
import { effectRow } from "./impls/types.js";
import { onWorkers, workerIds } from "./on-workers.js";
import { percentile, round } from "./stats.js";
import { createTable, dropTables } from "./tables.js";

type Item = Record<string, AttributeValue>;
type Shape = (key: string, row: Item) => Promise<unknown>;

const opts = new Command()
  .option("--requests <n>", "requests per shape and round", "3000")
  .option("--concurrency <n>", "requests in flight", "8")
  .option("--rounds <n>", "interleaved rounds", "3")
  .option("--shapes <prefixes>", "only the shapes whose names start with one of these ('|'-separated)")
  .parse()
  .opts<{ requests: string; concurrency: string; rounds: string; shapes?: string }>();

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
const local = await startDynamoDBLocal();
const client = new DynamoDBClient({
  endpoint: local.endpoint,
  region: LOCAL_REGION,
  credentials: LOCAL_CREDENTIALS,
});

const N = (n: number): AttributeValue => ({ N: String(n) });
const S = (s: string): AttributeValue => ({ S: s });

/** The user's attributes as `#u0 = :u0` clauses, with their names and values. */
function userClauses(row: Item) {
  const names: Record<string, string> = {};
  const values: Item = {};
  const sets: string[] = [];
  Object.entries(row)
    .filter(([k]) => k !== "pk")
    .forEach(([k, v], i) => {
      names[`#u${i}`] = k;
      values[`:u${i}`] = v;
      sets.push(`#u${i} = :u${i}`);
    });
  return { names, values, sets };
}

function stateValues(): Item {
  const now = Date.now();
  return {
    ":pos": S("0062a1b2c3d40001"),
    ":eid": S("created:bench-input/x:0062a1b2c3d40001"),
    ":fence": N(now * 1000),
    ":running": S("running"),
    ":expiredBefore": N(now - 1000),
    ":done": S("done"),
    ":tok": S("token-abc"),
    ":exp": N(Math.ceil(now / 1000) + 604800),
    ":res": S("null"),
  };
}

const STATE_NAMES = Object.fromEntries(
  [
    "st",
    "pos",
    "eid",
    "fence",
    "tok",
    "lease",
    "cpos",
    "ceid",
    "res",
    "rskip",
    "cfp",
    "wpos",
    "wfence",
    "exp",
    "att",
  ].map((n) => [`#${n}`, `eo_${n}`]),
);

/** An UpdateItem with `#x` written as `eo_x` where `plain` (no placeholder), sending only the names used. */
function update(
  table: string,
  key: string,
  row: Item,
  set: string,
  remove: string,
  condition: string,
  plain: boolean,
) {
  const u = userClauses(row);
  const expr = (s: string) => (plain ? s.replace(/#(?!u\d)(\w+)/g, "eo_$1") : s);
  const update = `SET ${expr(set)}, ${u.sets.join(", ")}${remove ? ` REMOVE ${expr(remove)}` : ""}`;
  const cond = expr(condition);
  const text = `${update} ${cond}`;
  const names = {
    ...Object.fromEntries(Object.entries(STATE_NAMES).filter(([k]) => text.includes(k))),
    ...u.names,
  };
  const all = { ...stateValues(), ...u.values };
  const values = Object.fromEntries(Object.entries(all).filter(([k]) => new RegExp(`${k}\\b`).test(text)));
  return new UpdateItemCommand({
    TableName: table,
    Key: { pk: S(key) },
    UpdateExpression: update,
    ConditionExpression: cond,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  });
}

const CURRENT_SET =
  "#st = :done, #pos = :pos, #eid = :eid, #cpos = :pos, #ceid = :eid, #fence = :fence, #tok = :tok, #exp = :exp, #res = :res, #wpos = :pos, #wfence = :fence";
const CURRENT_REMOVE = "#lease, #att, #cfp, #rskip";
const CURRENT_CONDITION =
  "(attribute_not_exists(#fence) OR ((#st <> :running OR #lease < :expiredBefore) AND (attribute_not_exists(#cpos) OR #cpos < :pos) AND #fence < :fence)) AND (attribute_not_exists(#wpos) OR #wpos < :pos OR (#wpos = :pos AND #wfence <= :fence))";

const PLAIN_SET =
  "#st = :done, #pos = :pos, #eid = :eid, #cpos = :pos, #ceid = :eid, #fence = :fence, #tok = :tok, #exp = :exp, #res = :res";
const PLAIN_CONDITION =
  "(attribute_not_exists(#fence) OR ((#st <> :running OR #lease < :expiredBefore) AND (attribute_not_exists(#cpos) OR #cpos < :pos) AND #fence < :fence)) AND (attribute_not_exists(#wpos) OR #wpos <= :pos)";

/** The inline store's own apply (claimAndCommit with one row write), as guard.apply sends it. */
function inlineApply(table: string): Shape {
  const store = new InlineDynamoDBStore({ client, tableName: table });
  return (key, row) => {
    const now = Date.now();
    const { pk: _pk, ...attributes } = unmarshall(row);
    const stateKey = `o#${key}`;
    return store.claimAndCommit({
      key: stateKey,
      position: "0062a1b2c3d40001",
      identity: `created:${key}`,
      nowMs: now,
      leaseUntilMs: now + 30_000,
      expiresAtSeconds: Math.ceil(now / 1000) + 604800,
      supersede: false,
      fence: now * 1000,
      token: "token-abc",
      leaseGraceMs: 1000,
      result: "null",
      writes: [store.row({ stateKey }, attributes)],
    });
  };
}

const shapes: Record<string, (table: string) => Shape> = {
  "raw PutItem": (table) => (key, row) =>
    client.send(
      new PutItemCommand({
        TableName: table,
        Item: { ...row, pk: S(key) },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    ),
  "UpdateItem, minimal (SET user attributes, attribute_not_exists(pk))": (table) => (key, row) => {
    const u = userClauses(row);
    return client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: S(key) },
        UpdateExpression: `SET ${u.sets.join(", ")}`,
        ConditionExpression: "attribute_not_exists(pk)",
        ExpressionAttributeNames: u.names,
        ExpressionAttributeValues: u.values,
      }),
    );
  },
  "inline apply, as in 0.1.0 (placeholders, full row condition)": (table) => (key, row) =>
    client.send(update(table, key, row, CURRENT_SET, CURRENT_REMOVE, CURRENT_CONDITION, false)),
  "inline apply, the store's (InlineDynamoDBStore.claimAndCommit)": inlineApply,
  "inline apply, plain, without eo_wpos/eo_wfence SET": (table) => (key, row) =>
    client.send(update(table, key, row, PLAIN_SET, CURRENT_REMOVE, PLAIN_CONDITION, true)),
  "inline apply, plain, without REMOVE": (table) => (key, row) =>
    client.send(
      update(table, key, row, `${PLAIN_SET}, #wpos = :pos, #wfence = :fence`, "", PLAIN_CONDITION, true),
    ),
  "inline apply, plain, condition only (no state SET/REMOVE)": (table) => (key, row) =>
    client.send(update(table, key, row, "#st = :done", "", PLAIN_CONDITION, true)),
  "what if: PutItem of the row with its state, the claim condition": (table) => (key, row) => {
    const v = stateValues();
    const state = {
      st: ":done",
      pos: ":pos",
      eid: ":eid",
      cpos: ":pos",
      ceid: ":eid",
      fence: ":fence",
      tok: ":tok",
    };
    const item: Item = { ...row, pk: S(key) };
    for (const [name, value] of Object.entries({
      ...state,
      exp: ":exp",
      res: ":res",
      wpos: ":pos",
      wfence: ":fence",
    }))
      item[`eo_${name}`] = v[value] as AttributeValue;
    const condition = PLAIN_CONDITION.replace(/#(\w+)/g, "eo_$1");
    const values = Object.fromEntries(
      Object.entries(v).filter(([k]) => new RegExp(`${k}\\b`).test(condition)),
    );
    return client.send(
      new PutItemCommand({
        TableName: table,
        Item: item,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
  },
  "what if: 5 state SETs, a shorter condition": (table) => (key, row) =>
    client.send(
      update(
        table,
        key,
        row,
        "#st = :done, #pos = :pos, #eid = :eid, #fence = :fence, #tok = :tok",
        "",
        "attribute_not_exists(#fence) OR (#lease < :expiredBefore AND #pos < :pos AND #fence < :fence)",
        true,
      ),
    ),
  "what if: 3 state SETs, a shorter condition": (table) => (key, row) =>
    client.send(
      update(
        table,
        key,
        row,
        "#pos = :pos, #fence = :fence, #tok = :tok",
        "",
        "attribute_not_exists(#fence) OR (#pos < :pos AND #fence < :fence)",
        true,
      ),
    ),
};
if (opts.shapes !== undefined) {
  const wanted = opts.shapes.split("|");
  for (const name of Object.keys(shapes)) if (!wanted.some((w) => name.startsWith(w))) delete shapes[name];
  if (!shapes["raw PutItem"]) throw new Error("--shapes must keep the raw PutItem (the baseline)");
}

const workers = Number(opts.concurrency);
const requests = Number(opts.requests);
let t = 0;
try {
  const once = async (name: string, count: number) => {
    const table = `cost-${++t}-out`;
    await createTable(client, table);
    const make = shapes[name]?.(table);
    if (!make) throw new Error(name);
    const cpu = cpuMeter(local.endpoint);
    const t0 = performance.now();
    cpu.start();
    await onWorkers(workerIds(workers), count, (_, i) => {
      const event = makeEvent(`k-${i}`, 1);
      return make(event.subject, effectRow(event));
    });
    const used = cpu.read();
    const ms = performance.now() - t0;
    await dropTables(client, [table]);
    return {
      server: (used.serverMs ?? Number.NaN) / count,
      client: used.clientMs / count,
      rate: count / (ms / 1000),
    };
  };
  for (const name of Object.keys(shapes)) await once(name, 1000);
  const results = new Map<string, { server: number[]; client: number[]; rate: number[] }>();
  for (let r = 0; r < Number(opts.rounds); r++) {
    for (const name of Object.keys(shapes)) {
      const x = await once(name, requests);
      const e = results.get(name) ?? { server: [], client: [], rate: [] };
      e.server.push(x.server);
      e.client.push(x.client);
      e.rate.push(x.rate);
      results.set(name, e);
    }
  }
  const base = results.get("raw PutItem");
  const baseServer = percentile(base?.server ?? [], 50);
  const baseRate = percentile(base?.rate ?? [], 50);
  console.log(`median of ${opts.rounds} rounds × ${requests} requests, ${workers} in flight`);
  console.log("server CPU ms/request (× raw) | client CPU ms/request | requests/s (share of raw)");
  for (const [name, e] of results) {
    const s = percentile(e.server, 50);
    const rate = percentile(e.rate, 50);
    console.log(
      `  ${name}: ${round(s, 3)} (${round(s / baseServer, 2)}×) | ${round(percentile(e.client, 50), 3)} | ${Math.round(rate)} (${round((100 * rate) / baseRate, 1)}%)`,
    );
  }
} finally {
  client.destroy();
  await local.stop();
}
