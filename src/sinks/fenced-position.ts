import { OptionsError } from "../core/errors.js";
import { assertPosition, type Position } from "../core/position.js";
import { UNORDERED_POSITION } from "../core/state.js";

/** What a fenced write needs from the guard's context: the event's position and the claim's fence. */
export interface FenceSource {
  position: Position | undefined;
  fence: number;
}

/**
 * The position a write carries, after checking the context: a valid position (or none) and a real fence. `sink`
 * names the sink in the error.
 */
export function fencedPosition(sink: string, ctx: FenceSource): Position {
  if (!Number.isSafeInteger(ctx.fence) || ctx.fence <= 0) {
    throw new OptionsError(`${sink}: a fenced write needs the claim's fence, got ${String(ctx.fence)}`);
  }
  if (ctx.position === undefined) return UNORDERED_POSITION;
  assertPosition(ctx.position);
  return ctx.position;
}
