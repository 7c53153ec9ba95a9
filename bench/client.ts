import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { DynamoDBClient, type TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../src/local/aws-local.js";
import { countRequests, type RequestCounter } from "../src/observe/request-counter.js";
import { type CapacityMeter, meterCapacity } from "./capacity.js";

/**
 * One SDK client shared by every implementation under test, so all of them pay the same client cost:
 * keep-alive sockets (the measurement is of DynamoDB Local, not of TCP setup), a pool larger than the
 * largest worker count, and the SDK's standard retry (retries are counted as requests too).
 */
export interface BenchClient {
  client: DynamoDBClient;
  requests: RequestCounter;
  /** Write and read units consumed, as DynamoDB reports them (refused writes estimated: see capacity.ts). */
  capacity: CapacityMeter;
  /** Every effect write DynamoDB acknowledged: the input of each successful write to an output table. */
  writes: WriteLog;
  destroy(): void;
}

export interface AcknowledgedWrite {
  table: string;
  pk: string;
  /** Event identity carried by the written item (`eid`). */
  eid: string;
  /** Position carried by the written item (`srcPos`). */
  pos: string;
}

export interface WriteLog {
  /** Writes acknowledged per table, in acknowledgement order. */
  for(table: string): AcknowledgedWrite[];
  clear(table?: string): void;
}

export function createBenchClient(
  endpoint: string,
  maxSockets: number,
  isOutputTable: (t: string) => boolean,
): BenchClient {
  const agentOptions = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets };
  const httpAgent = new HttpAgent(agentOptions);
  const httpsAgent = new HttpsAgent(agentOptions);
  const client = new DynamoDBClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 3,
    // Options, not an instance: the SDK builds its NodeHttpHandler from them (no direct @smithy import).
    requestHandler: { httpAgent, httpsAgent, connectionTimeout: 5_000, requestTimeout: 30_000 },
  });
  const requests = countRequests(client, "benchRequestCounter");
  const writes = logAcknowledgedWrites(client, isOutputTable);
  const capacity = meterCapacity(client);
  return {
    client,
    requests,
    capacity,
    writes,
    destroy() {
      client.destroy();
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

type Item = Record<string, { S?: string; N?: string }>;

/** A value placeholder, read where a `#a = ` clause's value starts. */
const VALUE_PLACEHOLDER = /:\w+/y;

/**
 * The effect an UpdateItem writes (`SET #a = :a` clauses naming `eid` and `srcPos`), with its key; else none. Looks
 * up only the placeholders of the two attributes the log keeps (no scan of the whole expression, no copies of it):
 * this runs on every request of the measured run, and must cost an UpdateItem no more than reading `Item` costs a
 * PutItem.
 */
function updatedEffect(input: unknown): Item | undefined {
  const u = input as {
    Key?: Item;
    UpdateExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Item;
  };
  const expression = u.UpdateExpression ?? "";
  const names = u.ExpressionAttributeNames ?? {};
  const set: Item = { ...(u.Key ?? {}) };
  for (const name in names) {
    const attribute = names[name];
    if (attribute !== "eid" && attribute !== "srcPos") continue;
    const at = expression.indexOf(`${name} = `);
    if (at < 0) continue;
    VALUE_PLACEHOLDER.lastIndex = at + name.length + 3;
    const placeholder = VALUE_PLACEHOLDER.exec(expression)?.[0];
    const v = placeholder === undefined ? undefined : u.ExpressionAttributeValues?.[placeholder];
    if (v) set[attribute] = v;
  }
  return set.eid && set.srcPos ? set : undefined;
}

/**
 * Records the puts to output tables that DynamoDB acknowledged (the request returned without error), read
 * from the request input: a PutItem, every Put of a successful TransactWriteItems, or an UpdateItem that sets the
 * effect's `eid` and `srcPos` (inline state: the row write rides on the guard's own update). An acknowledged
 * conditional write is an applied write, so this is the table's own write history, without needing Streams.
 */
function logAcknowledgedWrites(client: DynamoDBClient, isOutputTable: (t: string) => boolean): WriteLog {
  const byTable = new Map<string, AcknowledgedWrite[]>();
  const record = (table: string | undefined, item: Item | undefined) => {
    if (!table || !item || !isOutputTable(table)) return;
    const list = byTable.get(table) ?? [];
    byTable.set(table, list);
    list.push({ table, pk: item.pk?.S ?? "", eid: item.eid?.S ?? "", pos: item.srcPos?.S ?? "" });
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const input = args.input as { TableName?: string; Item?: Item; TransactItems?: TransactWriteItem[] };
      const command = context.commandName;
      if (command === "PutItemCommand") record(input.TableName, input.Item);
      if (command === "UpdateItemCommand" && input.TableName && isOutputTable(input.TableName))
        record(input.TableName, updatedEffect(args.input));
      if (command === "TransactWriteItemsCommand") {
        for (const t of input.TransactItems ?? []) record(t.Put?.TableName, t.Put?.Item as Item | undefined);
      }
      return out;
    },
    { step: "initialize", name: "benchWriteLog", override: true },
  );
  return {
    for: (table) => byTable.get(table) ?? [],
    clear: (table) => (table ? byTable.delete(table) : byTable.clear()),
  };
}
