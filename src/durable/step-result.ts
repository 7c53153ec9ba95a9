import { ResultSerializationError } from "../core/errors.js";

/**
 * A step's result as its marker keeps it: JSON, at most `maxBytes` (the engine's: its marker must hold it). Unlike
 * the guard's stored result, it is never omitted: a step that runs again must return what the first one returned.
 */
export function serializeStepResult(result: unknown, maxBytes: number): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch (cause) {
    throw new ResultSerializationError("a guarded step's result is not JSON-serializable", { cause });
  }
  if (json !== undefined && Buffer.byteLength(json, "utf8") > maxBytes) {
    throw new ResultSerializationError(
      `a guarded step's result exceeds ${maxBytes} bytes: keep large data elsewhere, return its key`,
    );
  }
  return json;
}
