import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { dynamoItemBytes } from "../src/engines/dynamodb/limits.js";

/**
 * Capacity consumed, summed from DynamoDB's own `ConsumedCapacity` (`ReturnConsumedCapacity: TOTAL` is set on every
 * request by a middleware), so each implementation is billed by the engine, not by our arithmetic.
 *
 * Where DynamoDB Local's figure is missing or wrong (checked on the bench's jar, 1.25.1), the units are computed by
 * AWS's billing rules instead, and `estimatedWcu` keeps that share apart:
 * - a refused conditional write: Local returns no `ConsumedCapacity` with `ConditionalCheckFailedException`, but AWS
 *   bills it as a write by the larger of the existing and the new item's size, at least 1 WCU: counted as
 *   ceil(max(old, new) / 1 KB), the old item from `ReturnValuesOnConditionCheckFailure` when asked for (else 0);
 * - TransactWriteItems: Local reports 4 WCU per table whatever the number of actions (1 or 3 puts alike), where
 *   AWS bills 2 WCU per action per KB: counted as 2 × ceil(size / 1 KB) per action (a Put's item size; an Update,
 *   Delete or ConditionCheck as 1 KB, which every item in the bench is under);
 * - a cancelled transaction (no figure either): at that same full price, an upper bound.
 */
export interface CapacityMeter {
  readonly wcu: number;
  readonly rcu: number;
  /** The part of `wcu` estimated for refused writes (no ConsumedCapacity returned by DynamoDB Local). */
  readonly estimatedWcu: number;
  /**
   * `wcu` by the role of the table written (the name's last `-` segment: `out`, `state`, `idem`, `lock`): how many
   * units land on one key's item, for where a hot key's partition stops scaling.
   */
  wcuByRole(): Record<string, number>;
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
  let byRole = new Map<string, number>();
  const addWrite = (table: unknown, units: number) => {
    const role = roleOf(table);
    byRole.set(role, (byRole.get(role) ?? 0) + units);
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? "").replace(/Command$/, "");
      const isRead = READS.has(command);
      if (!isRead && !WRITES.has(command)) return next(args);
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = "TOTAL";
      try {
        const out = await next(args);
        if (command === "TransactWriteItems") {
          const units = transactionUnits(input, [], addWrite);
          totals.wcu += units;
          totals.estimatedWcu += units;
          return out;
        }
        const consumed = (out.output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity;
        for (const c of [consumed ?? []].flat()) {
          const units = c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0);
          if (isRead) totals.rcu += units;
          else {
            totals.wcu += units;
            addWrite(input.TableName, units);
          }
        }
        return out;
      } catch (error) {
        const estimate = refusedWriteUnits(command, input, error, addWrite);
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
    wcuByRole: () => Object.fromEntries(byRole),
    reset() {
      byRole = new Map();
      totals.wcu = 0;
      totals.rcu = 0;
      totals.estimatedWcu = 0;
    },
  };
}

/** What AWS bills for a refused write (see above); 0 for any other error (throttling, validation: not billed). */
function refusedWriteUnits(
  command: string,
  input: Record<string, unknown>,
  error: unknown,
  addWrite: AddWrite,
): number {
  const name = (error as { name?: string }).name;
  if (name === "ConditionalCheckFailedException") {
    const old = (error as { Item?: Item }).Item;
    const written = (input.Item as Item | undefined) ?? {};
    const units = kb(Math.max(old ? dynamoItemBytes(old) : 0, dynamoItemBytes(written)));
    addWrite(input.TableName, units);
    return units;
  }
  if (name === "TransactionCanceledException" && command === "TransactWriteItems") {
    const reasons = (error as { CancellationReasons?: { Item?: Item }[] }).CancellationReasons ?? [];
    return transactionUnits(input, reasons, addWrite);
  }
  return 0;
}

type AddWrite = (table: unknown, units: number) => void;

/** A table's role: its name's last `-` segment (the bench names tables `<prefix>-out`, `-state`, `-idem`, `-lock`). */
const roleOf = (table: unknown): string => /[^-]*$/.exec(String(table ?? ""))?.[0] ?? "";

/** AWS's price of a TransactWriteItems: 2 WCU per action per KB of its item (old item where known). */
function transactionUnits(
  input: Record<string, unknown>,
  reasons: { Item?: Item }[],
  addWrite: AddWrite,
): number {
  const actions =
    (input.TransactItems as Record<string, { Item?: Item; TableName?: string }>[] | undefined) ?? [];
  return actions.reduce((sum, action, i) => {
    const body = Object.values(action)[0];
    const written = body?.Item ?? {};
    const old = reasons[i]?.Item;
    const units = 2 * kb(Math.max(old ? dynamoItemBytes(old) : 0, dynamoItemBytes(written)));
    addWrite(body?.TableName, units);
    return sum + units;
  }, 0);
}

/** Write units for an item of `bytes`: 1 per KB started, at least 1. */
const kb = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
