import { OptionsError } from "../core/errors.js";
import { requireKeyText } from "../core/key-text.js";
import { UNORDERED_POSITION } from "../core/state.js";
import { stateKey } from "../core/state-key.js";
import type { DispatchedExecution } from "./payload.js";

/**
 * The two records a guarded step writes beside its effects, on every engine:
 * - the subject's **execution fence** `f#<state key>` (position, execution): the newest execution of the subject,
 *   moved forward by each guarded step (and by the dispatcher's commit when it is given the effects): a step of an
 *   older position, or of a stopped execution, is refused;
 * - the step's **marker** `m#<execution name>@<step id>#<step name>` (or `m#<execution name>#<step key>`, see
 *   `markerStep`): absent until the step's effects land, with them, in the same atomic request; it keeps the step's
 *   result, returned when the step runs again.
 */
export const FENCE_PREFIX = "f#";
export const MARKER_PREFIX = "m#";
/** The execution of a stopped execution's fence: `!` is outside the execution name alphabet, so no step matches it. */
export const STOPPED_PREFIX = "!stopped:";

/** The position an execution's writes carry: the event's, or the empty one (sorts first) without one. */
export function positionOf(execution: DispatchedExecution): string {
  return execution.position ?? UNORDERED_POSITION;
}

/** The fence's key: one per subject for ordered events, one per event for the others (as the guard's state). */
export function fenceKey(execution: DispatchedExecution): string {
  return `${FENCE_PREFIX}${stateKey(execution.subject, execution.identity, execution.position !== null)}`;
}

/**
 * The longest marker key: DynamoDB's hash key limit (and under PostgreSQL's B-tree entry limit), on every engine, so
 * that a step name valid on one engine is valid on all.
 */
export const MAX_MARKER_KEY_BYTES = 2048;

/**
 * A step as the durable SDK numbers it: its name and its operation id in the execution (`"3"`, `"2-1-4"` inside a
 * child context or a map item), the same on every replay, so two steps of one name have two ids.
 */
export interface StepIdentity {
  name: string;
  id: string;
}

/** A step: its SDK identity, or a key of yours that names one step of the execution (`apply`'s string form). */
export type StepRef = string | StepIdentity;

/** The SDK's operation ids: decimal counters joined by `-`, one per level of child contexts. */
const STEP_ID = /^[1-9][0-9]*(-[1-9][0-9]*)*$/;

/** The step's name (its key, for a string). */
export function stepNameOf(step: StepRef): string {
  return typeof step === "string" ? step : step.name;
}

/**
 * The marker's key after the engine's prefix: `<execution name>#<step key>` for a key of yours, and
 * `<execution name>@<step id>#<step name>` for an SDK identity. Execution names are `[A-Za-z0-9_-]` and step ids have no
 * `#`, so each key names one execution and step, and the two forms never meet.
 */
export function markerStep(execution: DispatchedExecution, step: StepRef): string {
  const name = stepNameOf(step);
  if (typeof name !== "string" || name.length === 0) {
    throw new OptionsError("a guarded step needs a non-empty step name");
  }
  requireKeyText("step name", name);
  if (typeof step === "string") return `${execution.executionName}#${name}`;
  if (typeof step.id !== "string" || !STEP_ID.test(step.id)) {
    throw new OptionsError(
      `a step id is the durable SDK's operation id ("3", "2-1"), not ${JSON.stringify(step.id)}`,
    );
  }
  return `${execution.executionName}@${step.id}#${name}`;
}

/**
 * The marker's key; a step that makes it longer than `maxBytes` is an `OptionsError`, a name that breaks the key rule
 * a `MalformedKeyError` (src/core/key-text.ts), both thrown outside the step.
 */
export function markerKey(
  execution: DispatchedExecution,
  step: StepRef,
  maxBytes = MAX_MARKER_KEY_BYTES,
): string {
  const key = `${MARKER_PREFIX}${markerStep(execution, step)}`;
  if (Buffer.byteLength(key, "utf8") > maxBytes) {
    throw new OptionsError(`step name too long for the marker key (${maxBytes} bytes)`);
  }
  return key;
}

/** The fence a refused step saw: the newest execution's position and name, or that it was stopped. */
export interface FenceHolder {
  position: string | null;
  executionName: string | null;
  stopped: boolean;
}

/** The holder of a fence record (its position and execution as stored; absent ones null). */
export function fenceHolder(
  position: string | null | undefined,
  exec: string | null | undefined,
): FenceHolder {
  const stopped = exec?.startsWith(STOPPED_PREFIX) ?? false;
  return {
    position: position ?? null,
    executionName: stopped && exec ? exec.slice(STOPPED_PREFIX.length) : (exec ?? null),
    stopped,
  };
}

/** The execution a stopped fence names (for `stop`). */
export function stoppedExec(execution: DispatchedExecution): string {
  return `${STOPPED_PREFIX}${execution.executionName}`;
}
