import { EffectivelyOnceError } from "../../core/errors.js";
import type { StateRecord } from "../../core/state.js";

/**
 * The outcomes of `eonce state` that are no failure of the tool: nothing to act on (exit 1). Usage and connection
 * errors (OptionsError, StateUsageError, StoreError, …) exit 2.
 */
export class StateNotFoundError extends EffectivelyOnceError {
  readonly key: string;
  constructor(key: string) {
    super(`no state for ${key}`);
    this.key = key;
  }
}

/** A conditional step refused: the record is not as the operator expected; `state` is what holds instead. */
export class StateRefusedError extends EffectivelyOnceError {
  readonly key: string;
  readonly state: StateRecord;
  constructor(key: string, state: StateRecord, message: string) {
    super(message);
    this.key = key;
    this.state = state;
  }
}

/** A command line that cannot be acted on as given (e.g. `forget` without `--yes`). */
export class StateUsageError extends EffectivelyOnceError {}

/** 0 ok; 1 not found or refused; 2 usage or connection error. */
export type StateExitCode = 0 | 1 | 2;

export function exitCodeOf(error: unknown): StateExitCode {
  return error instanceof StateNotFoundError || error instanceof StateRefusedError ? 1 : 2;
}
