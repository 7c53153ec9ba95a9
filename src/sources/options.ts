import { OptionsError } from "../core/errors.js";
import { rejectUnknownKeys, requireOneOf } from "../core/options.js";
import type { ParseOptions, ResolvedParseOptions } from "./types.js";

const WHAT = "parseInvocation";

export function resolveParseOptions(options: ParseOptions | undefined): ResolvedParseOptions {
  if (options === undefined) return { messages: "reject" };
  if (typeof options !== "object" || options === null)
    throw new OptionsError(`${WHAT}: options must be an object`);
  rejectUnknownKeys(WHAT, options, ["messages", "correlationAttribute"]);
  const resolved: ResolvedParseOptions = {
    messages:
      options.messages === undefined
        ? "reject"
        : requireOneOf(WHAT, "messages", options.messages, ["accept", "reject"] as const),
  };
  const attribute = options.correlationAttribute;
  if (attribute !== undefined) {
    if (typeof attribute !== "string" || attribute.length === 0) {
      throw new OptionsError(`${WHAT}: correlationAttribute must be a non-empty string`);
    }
    resolved.correlationAttribute = attribute;
  }
  return resolved;
}
