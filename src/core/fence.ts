import { OptionsError } from "./errors.js";
import { assertPosition, type Position } from "./position.js";
import { UNORDERED_POSITION } from "./state.js";

/** What a fenced write needs from the guard's context: the event's position and the claim's fence. */
export interface FenceSource {
  position: Position | undefined;
  fence: number;
}

/** What a fenced write did: `applied`, or `stale` (the target holds newer work: nothing written). */
export type SinkWriteStatus = "applied" | "stale";

/**
 * The position a write carries, after checking the context: a valid position (or the empty one for events
 * without a position) and a real fence. `sink` names the caller in the error.
 */
export function fencedPosition(sink: string, ctx: FenceSource): Position {
  if (!Number.isSafeInteger(ctx.fence) || ctx.fence <= 0) {
    throw new OptionsError(`${sink}: a fenced write needs the claim's fence, got ${String(ctx.fence)}`);
  }
  if (ctx.position === undefined) return UNORDERED_POSITION;
  assertPosition(ctx.position);
  return ctx.position;
}
