import { marshall } from "@aws-sdk/util-dynamodb";
import { OptionsError } from "../core/errors.js";
import type { DynamoDBAtomicWrite } from "../stores/dynamodb/atomic-write.js";
import type { KeyValue } from "./dynamodb.js";

/**
 * An UpdateItem folded into the guard's commit (one TransactWriteItems: the effect and the commit land together or
 * not at all), for effects a fenced put does not fit: counters and balances (`add`), attributes of a shared row
 * (`set`), under a condition of the user's (`condition`, e.g. enough stock). Because it lands with the commit, an
 * ADD applies exactly once per event, whatever the redeliveries.
 */
export interface DynamoDBUpdateEffect {
  tableName: string;
  /** The row's whole key: hash key, and sort key on a composite key. */
  key: Record<string, KeyValue>;
  /** Numbers added with ADD (a missing attribute counts as 0; negative numbers subtract). */
  add?: Record<string, number>;
  /** Attributes set (SET). */
  set?: Record<string, unknown>;
  /**
   * A condition the row must meet, in DynamoDB's condition syntax with its own `#names` and `:values` (not
   * starting with `#eo_` / `:eo_`, which the helper uses).
   */
  condition?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };
  /**
   * When the condition does not hold: `skip` (default) commits without this write and reports it `refused`;
   * `abort` cancels the commit: the outcome is `failed` (EffectRefusedError), the claim released, and the
   * delivery retried (then dead-lettered) — for an effect the event must not be committed without.
   */
  onConditionFailed?: "skip" | "abort";
  /** How the write is named in the outcome's `writes`. Default `update <table>/<key>`. */
  description?: string;
}

/** Builds the folded update; queue it with `ctx.atCommit(updateEffect(…))`. Bad input throws OptionsError here. */
export function updateEffect(effect: DynamoDBUpdateEffect): DynamoDBAtomicWrite {
  const add = Object.entries(effect.add ?? {});
  const set = Object.entries(effect.set ?? {});
  if (add.length + set.length === 0)
    throw new OptionsError("updateEffect: give add or set (nothing to update)");
  for (const [name, n] of add) {
    if (typeof n !== "number" || !Number.isFinite(n))
      throw new OptionsError(`updateEffect: add.${name} must be a number`);
  }
  const c = effect.condition;
  for (const placeholder of [...Object.keys(c?.names ?? {}), ...Object.keys(c?.values ?? {})]) {
    if (/^[#:]eo_/.test(placeholder))
      throw new OptionsError(`updateEffect: ${placeholder} uses the reserved prefix eo_`);
  }
  const names: Record<string, string> = { ...c?.names };
  const values: Record<string, unknown> = { ...c?.values };
  const clause = (entries: [string, unknown][], kind: "a" | "s", form: (n: string, v: string) => string) =>
    entries.map(([name, value], i) => {
      names[`#eo_${kind}${i}`] = name;
      values[`:eo_${kind}${i}`] = value;
      return form(`#eo_${kind}${i}`, `:eo_${kind}${i}`);
    });
  const parts = [
    set.length > 0 ? `SET ${clause(set, "s", (n, v) => `${n} = ${v}`).join(", ")}` : "",
    add.length > 0 ? `ADD ${clause(add, "a", (n, v) => `${n} ${v}`).join(", ")}` : "",
  ];
  return {
    engine: "dynamodb",
    description: effect.description ?? `update ${effect.tableName}/${describeKey(effect.key)}`,
    refused: effect.onConditionFailed === "abort" ? "abort" : "refused",
    item: {
      Update: {
        TableName: effect.tableName,
        Key: marshall(effect.key),
        UpdateExpression: parts.filter(Boolean).join(" "),
        ...(c ? { ConditionExpression: c.expression } : {}),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: marshall(values, {
          removeUndefinedValues: true,
          convertClassInstanceToMap: true,
        }),
      },
    },
  };
}

/** A row key for descriptions: its values joined by `/`. */
export function describeKey(key: Record<string, KeyValue>): string {
  return Object.values(key).map(String).join("/");
}
