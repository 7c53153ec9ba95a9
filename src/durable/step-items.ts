import type { AttributeValue, TransactWriteItem } from "@aws-sdk/client-dynamodb";
import { OptionsError } from "../core/errors.js";
import { UNORDERED_POSITION } from "../core/state.js";
import { stateKey } from "../core/state-key.js";
import { DYNAMODB_MAX_HASH_KEY_BYTES } from "../engines/dynamodb/values.js";
import type { DispatchedExecution } from "./payload.js";

/**
 * The two items a guarded step writes beside its effects, in the effects table (one string hash key):
 * - the subject's **execution fence** `f#<state key>` (`pos`, `exec`): the newest execution of the subject, moved
 *   forward by each guarded step (and by the dispatcher's commit when it is given the effects): a step of an
 *   older position, or of a stopped execution, is refused;
 * - the step's **marker** `m#<execution name>#<step name>`: absent until the step's effects land, with them, in the
 *   same transaction; it keeps the step's result, returned when the step runs again.
 * Execution names are `[A-Za-z0-9_-]` (no `#`), so a marker key names one execution and step.
 */
export const FENCE_PREFIX = "f#";
export const MARKER_PREFIX = "m#";
/** `exec` of a stopped execution's fence: `!` is outside the execution name alphabet, so no step matches it. */
export const STOPPED_PREFIX = "!stopped:";

type Item = Record<string, AttributeValue>;
const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

/** The position an execution's writes carry: the event's, or the empty one (sorts first) without one. */
export function positionOf(execution: DispatchedExecution): string {
  return execution.position ?? UNORDERED_POSITION;
}

/** The fence row's key: one per subject for ordered events, one per event for the others (as the guard's state). */
export function fenceKey(execution: DispatchedExecution): string {
  return `${FENCE_PREFIX}${stateKey(execution.subject, execution.identity, execution.position !== null)}`;
}

/** The marker's key; a step name that makes it too long for a hash key is an `OptionsError`. */
export function markerKey(execution: DispatchedExecution, stepName: string): string {
  if (typeof stepName !== "string" || stepName.length === 0) {
    throw new OptionsError("a guarded step needs a non-empty step name");
  }
  const key = `${MARKER_PREFIX}${execution.executionName}#${stepName}`;
  if (Buffer.byteLength(key, "utf8") > DYNAMODB_MAX_HASH_KEY_BYTES) {
    throw new OptionsError(`step name too long for the marker key (${DYNAMODB_MAX_HASH_KEY_BYTES} bytes)`);
  }
  return key;
}

/**
 * Moves the subject's fence to `execution` (as `exec`): lands when the fence is absent, older, or already this
 * execution's. `exec` is the execution name, or a stopped mark for `stop`.
 */
export function fenceUpdate(
  table: string,
  keyAttribute: string,
  execution: DispatchedExecution,
  exec = execution.executionName,
): NonNullable<TransactWriteItem["Update"]> {
  return {
    TableName: table,
    Key: { [keyAttribute]: S(fenceKey(execution)) },
    UpdateExpression: "SET #pos = :pos, #exec = :exec",
    ConditionExpression: "attribute_not_exists(#k) OR #pos < :pos OR (#pos = :pos AND #exec = :exec)",
    ExpressionAttributeNames: { "#k": keyAttribute, "#pos": "pos", "#exec": "exec" },
    ExpressionAttributeValues: { ":pos": S(positionOf(execution)), ":exec": S(exec) },
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  };
}

/** What a marker holds besides its key. */
export interface MarkerFields {
  stepName: string;
  fence: number;
  result: string | undefined;
  nowMs: number;
  expiresAtSeconds: number;
}

/** The marker's conditional put: lands only where no marker is (the step has not been applied). */
export function markerPut(
  table: string,
  keyAttribute: string,
  execution: DispatchedExecution,
  m: MarkerFields,
): NonNullable<TransactWriteItem["Put"]> {
  const item: Item = {
    [keyAttribute]: S(markerKey(execution, m.stepName)),
    exec: S(execution.executionName),
    step: S(m.stepName),
    subject: S(execution.subject),
    pos: S(positionOf(execution)),
    fence: N(m.fence),
    appliedAt: N(m.nowMs),
    expiresAt: N(m.expiresAtSeconds),
  };
  if (m.result !== undefined) item.res = S(m.result);
  return {
    TableName: table,
    Item: item,
    ConditionExpression: "attribute_not_exists(#k)",
    ExpressionAttributeNames: { "#k": keyAttribute },
    ReturnValuesOnConditionCheckFailure: "ALL_OLD",
  };
}

/** The fence a refused step saw: the newest execution's position and name, or that it was stopped. */
export interface FenceHolder {
  position: string | null;
  executionName: string | null;
  stopped: boolean;
}

/** Reads a fence row returned by a refusal. */
export function holderOf(item: Item | undefined): FenceHolder {
  const exec = item?.exec?.S ?? null;
  const stopped = exec?.startsWith(STOPPED_PREFIX) ?? false;
  return {
    position: item?.pos?.S ?? null,
    executionName: stopped && exec ? exec.slice(STOPPED_PREFIX.length) : exec,
    stopped,
  };
}
