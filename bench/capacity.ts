import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";

/**
 * Capacity consumed, summed from DynamoDB's own `ConsumedCapacity` (`ReturnConsumedCapacity: TOTAL` is set on every
 * request by a middleware), so each implementation is billed by the engine, not by our arithmetic.
 *
 * Refused writes: DynamoDB Local returns no `ConsumedCapacity` on a `ConditionalCheckFailedException` nor on a
 * `TransactionCanceledException` (checked on the bench's jar), but AWS bills a refused conditional write as a write:
 * by the larger of the existing and the new item's size, at least 1 WCU. So a refused single-item write is counted
 * here as ceil(max(old item, new item) / 1 KB) WCU, the old item read from `ReturnValuesOnConditionCheckFailure`
 * when the request asked for it (else 1 KB); a cancelled transaction as 2 WCU per KB of each action's item (its
 * full transactional price, an upper bound). `estimatedWcu` keeps that share apart.
 */
export interface CapacityMeter {
  readonly wcu: number;
  readonly rcu: number;
  /** The part of `wcu` estimated for refused writes (no ConsumedCapacity returned by DynamoDB Local). */
  readonly estimatedWcu: number;
  reset(): void;
}

const READS = new Set(["GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"]);
const WRITES = new Set(["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"]);

type Item = Record<string, AttributeValue>;
interface Consumed {
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
}

export function meterCapacity(client: Pick<DynamoDBClient, "middlewareStack">): CapacityMeter {
  const totals = { wcu: 0, rcu: 0, estimatedWcu: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? "").replace(/Command$/, "");
      const isRead = READS.has(command);
      if (!isRead && !WRITES.has(command)) return next(args);
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = "TOTAL";
      try {
        const out = await next(args);
        const consumed = (out.output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity;
        for (const c of [consumed ?? []].flat()) {
          const units = c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0);
          if (isRead) totals.rcu += units;
          else totals.wcu += units;
        }
        return out;
      } catch (error) {
        const estimate = refusedWriteUnits(command, input, error);
        totals.wcu += estimate;
        totals.estimatedWcu += estimate;
        throw error;
      }
    },
    { step: "initialize", name: "benchCapacityMeter", override: true },
  );
  return {
    get wcu() {
      return totals.wcu;
    },
    get rcu() {
      return totals.rcu;
    },
    get estimatedWcu() {
      return totals.estimatedWcu;
    },
    reset() {
      totals.wcu = 0;
      totals.rcu = 0;
      totals.estimatedWcu = 0;
    },
  };
}

/** What AWS bills for a refused write (see above); 0 for any other error (throttling, validation: not billed). */
function refusedWriteUnits(command: string, input: Record<string, unknown>, error: unknown): number {
  const name = (error as { name?: string }).name;
  if (name === "ConditionalCheckFailedException") {
    const old = (error as { Item?: Item }).Item;
    const written = (input.Item as Item | undefined) ?? {};
    return kb(Math.max(old ? itemBytes(old) : 0, itemBytes(written)));
  }
  if (name === "TransactionCanceledException" && command === "TransactWriteItems") {
    const actions = (input.TransactItems as Record<string, { Item?: Item }>[] | undefined) ?? [];
    const reasons = (error as { CancellationReasons?: { Item?: Item }[] }).CancellationReasons ?? [];
    return actions.reduce((sum, action, i) => {
      const written = Object.values(action)[0]?.Item ?? {};
      const old = reasons[i]?.Item;
      return sum + 2 * kb(Math.max(old ? itemBytes(old) : 0, itemBytes(written)));
    }, 0);
  }
  return 0;
}

/** Write units for an item of `bytes`: 1 per KB started, at least 1. */
const kb = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** DynamoDB's item size: attribute names plus values (strings and numbers as their text). */
export function itemBytes(item: Item): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    bytes += Buffer.byteLength(name);
    if (value.S !== undefined) bytes += Buffer.byteLength(value.S);
    else if (value.N !== undefined) bytes += value.N.length;
    else bytes += Buffer.byteLength(JSON.stringify(value));
  }
  return bytes;
}
