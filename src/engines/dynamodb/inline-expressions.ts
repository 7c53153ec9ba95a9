import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { OptionsError } from "../../core/errors.js";
import type { Item } from "./expressions.js";
import * as dx from "./expressions.js";
import { DYNAMODB_MAX_EXPRESSION_BYTES } from "./values.js";

/**
 * Inline state: the guard's state lives in the user's own row, in attributes with the reserved prefix `eo_`.
 *
 * | attribute  | type | meaning (as in the state table, src/engines/dynamodb/schema.ts)            |
 * |------------|------|----------------------------------------------------------------------------|
 * | eo_st      | S    | running / done / released                                                  |
 * | eo_pos     | S    | position of the current or last claim                                      |
 * | eo_eid     | S    | identity of the current or last claim                                      |
 * | eo_fence   | N    | fence of the current or last claim                                         |
 * | eo_tok     | S    | token of the claim that holds (or last held) the row                       |
 * | eo_lease   | N    | epoch ms; present while running                                            |
 * | eo_cpos    | S    | position of the last committed event (the row's user attributes are its)   |
 * | eo_ceid    | S    | identity of the last committed event                                       |
 * | eo_res     | S    | JSON result replayed to duplicates                                         |
 * | eo_rskip   | N    | size of a committed result too large to store                              |
 * | eo_cfp     | S    | payload fingerprint of the last committed event (opt-in)                   |
 * | eo_wpos    | S    | position of the claim whose row write the user attributes hold             |
 * | eo_wfence  | N    | fence of that claim: row writes are fenced by (eo_wpos, eo_wfence)         |
 * | eo_exp     | N    | epoch seconds the guard would keep state for; NOT a TTL attribute by default |
 * | eo_att     | N    | consecutive claims of the current identity; removed at commit              |
 */

/** Placeholders → the reserved attribute names; the admin (inline-admin.ts) uses them too. */
export const INLINE_STATE_ATTRIBUTE_NAMES = {
  "#st": "eo_st",
  "#pos": "eo_pos",
  "#eid": "eo_eid",
  "#fence": "eo_fence",
  "#tok": "eo_tok",
  "#lease": "eo_lease",
  "#cpos": "eo_cpos",
  "#ceid": "eo_ceid",
  "#res": "eo_res",
  "#rskip": "eo_rskip",
  "#cfp": "eo_cfp",
  "#wpos": "eo_wpos",
  "#wfence": "eo_wfence",
  "#exp": "eo_exp",
  "#att": "eo_att",
};

/** The reserved attribute names, for documentation and checks. */
export const INLINE_STATE_ATTRIBUTES: readonly string[] = Object.values(INLINE_STATE_ATTRIBUTE_NAMES);

/**
 * The state's attributes less the row write's stamp (`eo_wpos`, `eo_wfence`): what forgetting a state key removes.
 * The stamp describes the user's attributes, not the state, so an older event still cannot replace them after it.
 */
const { "#wpos": _wpos, "#wfence": _wfence, ...forgotten } = INLINE_STATE_ATTRIBUTE_NAMES;
export const FORGOTTEN_NAMES: Readonly<Record<string, string>> = forgotten;

/** The row writes' attributes, merged (later writes win), and a key of their shape: which are set, which removed. */
export function rowAttributes(writes: readonly { set: Item; remove: readonly string[] }[]): {
  key: string;
  names: string[];
  values: (AttributeValue | undefined)[];
} {
  const merged = new Map<string, AttributeValue | undefined>();
  for (const w of writes) {
    for (const name of Object.keys(w.set)) merged.set(name, w.set[name]);
    for (const name of w.remove) merged.set(name, undefined);
  }
  // A write of no attributes still claims the row (`eo_wpos`): an update with writes has another shape.
  let key = writes.length > 0 ? "w" : "";
  for (const [name, value] of merged) key += `${value === undefined ? "-" : "+"}${name.length}:${name}`;
  return { key, names: [...merged.keys()], values: [...merged.values()] };
}

/** The expressions of a row update and the placeholders of its row attributes (see #rowUpdate). */
export interface RowShape {
  expression: dx.ExpressionShape;
  /** The user names' placeholders `#u0`…, if any. */
  names: Record<string, string> | undefined;
  /** Per row attribute, the placeholder of its value (`:u0`…; none for an attribute removed). */
  userValues: (string | undefined)[];
}

/**
 * The full update expression, built once per shape: the state clauses plus the row writes' SET and REMOVE clauses,
 * with placeholders `#u0`… for the user's attribute names (any name is allowed there).
 */
export function rowShape(
  parts: dx.UpdateClauses,
  withWrites: boolean,
  attributes: { names: string[]; values: (AttributeValue | undefined)[] },
  position: WritePosition,
  condition: string,
): RowShape {
  const names: Record<string, string> = {};
  const userValues: (string | undefined)[] = [];
  const sets = parts.set ? [parts.set.replace(/^SET /, "")] : [];
  // The row remembers whose write it holds, so that an older position's write never replaces it.
  if (withWrites) sets.push(`#wpos = ${position}`, "#wfence = :fence");
  const removes = [...parts.remove];
  attributes.names.forEach((name, i) => {
    const placeholder = `#u${i}`;
    names[placeholder] = name;
    if (attributes.values[i] === undefined) {
      removes.push(placeholder);
      userValues.push(undefined);
    } else {
      sets.push(`${placeholder} = :u${i}`);
      userValues.push(`:u${i}`);
    }
  });
  const update = [
    sets.length > 0 ? `SET ${sets.join(", ")}` : "",
    removes.length > 0 ? `REMOVE ${removes.join(", ")}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  // The state attributes are named in the expressions themselves (`eo_*` are valid names): only the user's are
  // placeholders.
  const expression = dx.expressionShape(update, condition, INLINE_STATE_ATTRIBUTE_NAMES);
  return { expression, names: attributes.names.length > 0 ? names : undefined, userValues };
}

/** The longest state clauses a row update carries beside the row's (under 300 bytes): room kept in the expression. */
const STATE_CLAUSE_BYTES = 512;

/**
 * Refuses a row write whose own SET and REMOVE clauses (`#u0 = :u0, …`) leave no room for the state's in DynamoDB's
 * 4 KB update expression: about 200 attributes.
 */
export function checkRowExpression(set: Item, remove: readonly string[]): void {
  const count = Object.keys(set).length + remove.length;
  let bytes = 0;
  for (let i = 0; i < count; i++) bytes += `#u${i} = :u${i}, `.length;
  if (bytes > DYNAMODB_MAX_EXPRESSION_BYTES - STATE_CLAUSE_BYTES) {
    throw new OptionsError(
      `InlineDynamoDBStore.row: ${count} attributes do not fit DynamoDB's 4 KB update expression; write fewer`,
    );
  }
}

/** Where a row write's position comes from: the held claim's (`#pos`), or the request's (`:pos`, apply). */
export type WritePosition = "#pos" | ":pos";

/**
 * The row holds no newer work than this write's: no write yet, an older position, or the same position from this
 * claim (its own direct write before its commit) or an older one. So a newer event's direct write that never
 * committed is not replaced by an older event that took the expired claim over.
 */
export function rowNotNewer(position: WritePosition): string {
  return `(attribute_not_exists(#wpos) OR #wpos < ${position} OR (#wpos = ${position} AND #wfence <= :fence))`;
}

/**
 * rowNotNewer(":pos") under the claim condition, shorter (DynamoDB parses every token of it on every request): the
 * claim needs `#fence < :fence`, and a row write's fence never exceeds the row's (`#wfence` is set from a fence the
 * row held), so `#wpos = :pos` already implies `#wfence <= :fence`.
 */
export const CLAIMED_ROW_NOT_NEWER = "(attribute_not_exists(#wpos) OR #wpos <= :pos)";

/** A row write by the holder of the claim (commit, putRow). */
export const FENCED_ROW_NOT_NEWER = `${dx.FENCED_CONDITION} AND ${rowNotNewer("#pos")}`;

/** Whether the row (as refused) holds a newer write than one at `position` by `fence`: rowNotNewer's negation. */
export function rowNewer(item: Item | undefined, position: string, fence: number): boolean {
  const wpos = item?.[INLINE_STATE_ATTRIBUTE_NAMES["#wpos"]]?.S;
  if (wpos === undefined) return false;
  return (
    wpos > position ||
    (wpos === position && Number(item?.[INLINE_STATE_ATTRIBUTE_NAMES["#wfence"]]?.N) > fence)
  );
}
