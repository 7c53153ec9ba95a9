import { ResultSerializationError } from "../core/errors.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../engines/dynamodb/limits.js";

/**
 * A step's result as its marker keeps it: JSON, at most 300 KB (the marker must fit DynamoDB's 400 KB item). Unlike
 * the guard's stored result, it is never omitted: a step that runs again must return what the first one returned.
 */
export function serializeStepResult(result: unknown): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch (cause) {
    throw new ResultSerializationError("a guarded step's result is not JSON-serializable", { cause });
  }
  if (json !== undefined && Buffer.byteLength(json, "utf8") > DYNAMODB_MAX_RESULT_BYTES) {
    throw new ResultSerializationError(
      `a guarded step's result exceeds ${DYNAMODB_MAX_RESULT_BYTES} bytes: keep large data elsewhere, return its key`,
    );
  }
  return json;
}
