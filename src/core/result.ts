import { ResultSerializationError } from "./errors.js";

/** A handler's result as stored for replay: its JSON, or only its size when it is too large to keep. */
export type StoredResult = { json?: string; omittedBytes?: number };

/**
 * Serializes a result for the store. Results over `maxBytes` are not stored (the outcome and the state say so):
 * an oversized result must never make the commit fail, or every redelivery would run the handler again.
 */
export function serializeResult(result: unknown, enabled: boolean, maxBytes: number): StoredResult {
  if (!enabled || result === undefined) return {};
  let json: string;
  try {
    json = JSON.stringify(result);
  } catch (cause) {
    throw new ResultSerializationError(
      "the handler's result is not JSON-serializable (or set storeResult: false)",
      { cause },
    );
  }
  if (json === undefined) return {}; // a function or symbol: nothing to replay
  const bytes = Buffer.byteLength(json, "utf8");
  return bytes > maxBytes ? { omittedBytes: bytes } : { json };
}

export function parseResult<R>(json: string | undefined): R | undefined {
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json) as R;
  } catch {
    return undefined;
  }
}
