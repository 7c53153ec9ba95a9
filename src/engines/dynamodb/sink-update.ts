import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { describeValue } from "../../core/describe-value.js";
import { OptionsError } from "../../core/errors.js";
import type { DynamoDBAtomicWrite } from "./atomic-write.js";
import { describeKey, type KeyValue } from "./sink-key.js";
import {
  attributeValue,
  checkExpression,
  checkItemBytes,
  checkName,
  DYNAMODB_MAX_HASH_KEY_BYTES,
  keyValueProblem,
} from "./values.js";

/**
 * An UpdateItem folded into the guard's commit (one TransactWriteItems: the effect and the commit land together or
 * not at all), for effects a fenced put does not fit: counters and balances (`add`), attributes of a shared row
 * (`set`, `remove`), under a condition of the user's (`condition`, e.g. enough stock). Because it lands with the
 * commit, an ADD applies exactly once per event, whatever the redeliveries.
 */
export interface DynamoDBUpdateEffect {
  tableName: string;
  /** The row's whole key: hash key, and sort key on a composite key. */
  key: Record<string, KeyValue>;
  /** Numbers added with ADD (a missing attribute counts as 0; negative numbers subtract). */
  add?: Record<string, number>;
  /** Attributes set (SET). A value must be storable: `undefined` is refused (name the attribute in `remove`). */
  set?: Record<string, unknown>;
  /** Attributes removed (REMOVE). */
  remove?: string[];
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

const WHERE = "updateEffect";

/**
 * Builds the folded update; queue it with `ctx.atCommit(updateEffect(…))`. Everything DynamoDB would refuse whatever
 * the row holds is refused here with OptionsError (src/engines/dynamodb/values.ts): a value it cannot store
 * (undefined, NaN, an empty set, a number out of range, nesting past 31 levels), an empty or oversized name, one
 * attribute in two actions, a key attribute updated, a condition's placeholder unused or undefined, an expression over
 * 4 KB. Such a commit would otherwise fail the same way on every redelivery.
 */
export function updateEffect(effect: DynamoDBUpdateEffect): DynamoDBAtomicWrite {
  if (typeof effect !== "object" || effect === null)
    throw new OptionsError(`${WHERE}: give an effect object`);
  checkTableName(effect.tableName);
  const key = keyOf(effect.key);
  const c = conditionOf(effect.condition);
  if (![undefined, "skip", "abort"].includes(effect.onConditionFailed))
    throw new OptionsError(`${WHERE}: onConditionFailed must be "skip" or "abort"`);
  const names: Record<string, string> = { ...c?.names };
  const values: Record<string, AttributeValue> = { ...c?.values };
  const clause = (
    kind: string,
    entries: [string, AttributeValue | undefined][],
    form: (n: string, v: string) => string,
  ) =>
    entries.map(([name, value], i) => {
      names[`#eo_${kind}${i}`] = name;
      if (value !== undefined) values[`:eo_${kind}${i}`] = value;
      return form(`#eo_${kind}${i}`, `:eo_${kind}${i}`);
    });
  const { set, add, remove } = actionsOf(effect, Object.keys(key));
  const update = [
    set.length > 0 ? `SET ${clause("s", set, (n, v) => `${n} = ${v}`).join(", ")}` : "",
    remove.length > 0 ? `REMOVE ${clause("r", remove, (n) => n).join(", ")}` : "",
    add.length > 0 ? `ADD ${clause("a", add, (n, v) => `${n} ${v}`).join(", ")}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  checkExpression(`${WHERE}: the update expression`, update);
  return {
    engine: "dynamodb",
    description: effect.description ?? `update ${effect.tableName}/${describeKey(effect.key)}`,
    refused: effect.onConditionFailed === "abort" ? "abort" : "refused",
    item: {
      Update: {
        TableName: effect.tableName,
        Key: key,
        UpdateExpression: update,
        ...(c ? { ConditionExpression: c.expression } : {}),
        ExpressionAttributeNames: names,
        // DynamoDB refuses an empty map of values (an update that only removes).
        ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
      },
    },
  };
}

/** The actions, checked: storable values, valid names, each attribute in one action only, no key attribute. */
function actionsOf(
  effect: DynamoDBUpdateEffect,
  keyNames: string[],
): {
  set: [string, AttributeValue][];
  add: [string, AttributeValue][];
  remove: [string, undefined][];
} {
  const set = Object.entries(record("set", effect.set)).map(([name, value]): [string, AttributeValue] => {
    if (value === undefined)
      throw new OptionsError(
        `${named("set", name)} is undefined (to delete the attribute, name it in remove)`,
      );
    return [name, attributeValue(named("set", name), value)];
  });
  const add = Object.entries(record("add", effect.add)).map(([name, n]): [string, AttributeValue] => {
    if (typeof n !== "number") throw new OptionsError(`${named("add", name)} must be a number`);
    return [name, attributeValue(named("add", name), n)];
  });
  if (effect.remove !== undefined && !Array.isArray(effect.remove))
    throw new OptionsError(`${WHERE}: remove must be an array of attribute names`);
  const remove = (effect.remove ?? []).map((name): [string, undefined] => [name, undefined]);
  const all = [...set, ...add, ...remove].map(([name]) => name);
  if (all.length === 0) throw new OptionsError(`${WHERE}: give add, set or remove (nothing to update)`);
  const seen = new Set<string>();
  for (const name of all) {
    checkName(WHERE, name);
    if (seen.has(name))
      throw new OptionsError(
        `${WHERE}: attribute ${describeValue(name)} is in two actions (DynamoDB refuses that)`,
      );
    if (keyNames.includes(name))
      throw new OptionsError(
        `${WHERE}: attribute ${describeValue(name)} is part of the key and cannot be updated`,
      );
    seen.add(name);
  }
  checkItemBytes(WHERE, Object.fromEntries([...set, ...add]));
  return { set, add, remove };
}

/** `updateEffect: set["price"]`: where a problem is, names quoted and capped for the message. */
function named(what: string, name: string): string {
  return `${WHERE}: ${what}[${describeValue(name)}]`;
}

function record(what: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new OptionsError(`${WHERE}: ${what} must be an object of attribute → value`);
  return value as Record<string, unknown>;
}

/** A table name or ARN DynamoDB accepts. */
const TABLE_NAME = /^(?:arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table\/)?[A-Za-z0-9_.-]{3,255}$/;

function checkTableName(name: unknown): void {
  if (typeof name !== "string" || !TABLE_NAME.test(name))
    throw new OptionsError(`${WHERE}: tableName ${describeValue(name)} is no DynamoDB table name`);
}

/** The key, marshalled: one or two attributes (hash, sort), each a non-empty string or a number. */
function keyOf(key: unknown): Record<string, AttributeValue> {
  if (typeof key !== "object" || key === null)
    throw new OptionsError(`${WHERE}: key must be an object of key attribute → value`);
  const entries = Object.entries(key);
  if (entries.length === 0 || entries.length > 2)
    throw new OptionsError(`${WHERE}: key must hold the hash key and, on a composite key, the sort key`);
  const out: Record<string, AttributeValue> = {};
  for (const [name, value] of entries) {
    checkName(`${WHERE}: key`, name);
    const problem = keyValueProblem(value, DYNAMODB_MAX_HASH_KEY_BYTES);
    if (problem) throw new OptionsError(`${named("key", name)} ${problem}`);
    out[name] = typeof value === "number" ? { N: String(value) } : { S: String(value) };
  }
  return out;
}

/** Placeholders DynamoDB accepts: `#` or `:`, then letters, digits and `_` (255 bytes in all). */
const PLACEHOLDER = { "#": /^#[A-Za-z0-9_]{1,254}$/, ":": /^:[A-Za-z0-9_]{1,254}$/ };

/** The user's condition, checked: each placeholder well formed, defined and used, each value storable. */
function conditionOf(
  c: DynamoDBUpdateEffect["condition"],
): { expression: string; names: Record<string, string>; values: Record<string, AttributeValue> } | undefined {
  if (c === undefined) return undefined;
  if (typeof c !== "object" || c === null) throw new OptionsError(`${WHERE}: condition must be an object`);
  checkExpression(`${WHERE}: condition.expression`, c.expression);
  const names = record("condition.names", c.names) as Record<string, string>;
  const values = record("condition.values", c.values);
  const defined = [...Object.keys(names), ...Object.keys(values)];
  for (const [kind, placeholders] of [
    ["#", Object.keys(names)],
    [":", Object.keys(values)],
  ] as const) {
    for (const placeholder of placeholders) {
      if (/^[#:]eo_/.test(placeholder))
        throw new OptionsError(`${WHERE}: ${placeholder} uses the reserved prefix eo_`);
      if (!PLACEHOLDER[kind].test(placeholder))
        throw new OptionsError(`${WHERE}: condition placeholder ${describeValue(placeholder)} is malformed`);
    }
  }
  const used = new Set(c.expression.match(/[#:][A-Za-z0-9_]+/g));
  for (const placeholder of used) {
    if (!defined.includes(placeholder))
      throw new OptionsError(`${WHERE}: condition uses ${placeholder} but does not define it`);
  }
  for (const placeholder of defined) {
    if (!used.has(placeholder))
      throw new OptionsError(`${WHERE}: condition defines ${placeholder} but does not use it`);
  }
  for (const [placeholder, name] of Object.entries(names))
    checkName(named("condition.names", placeholder), name);
  const marshalled = Object.fromEntries(
    Object.entries(values).map(([p, v]) => [p, attributeValue(named("condition.values", p), v)]),
  );
  return { expression: c.expression, names, values: marshalled };
}
