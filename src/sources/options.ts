import { oneOf, resolveOptions, schemaFor, string } from "../core/options.js";
import type { ParseOptions, ResolvedParseOptions } from "./types.js";

export const PARSE_OPTIONS = schemaFor<ParseOptions>()({
  messages: oneOf(["accept", "reject"], { default: "reject" }),
  correlationAttribute: string(),
});

export function resolveParseOptions(options: ParseOptions | undefined): ResolvedParseOptions {
  const o = resolveOptions("parseInvocation", PARSE_OPTIONS, options ?? {});
  return {
    messages: o.messages,
    ...(o.correlationAttribute !== undefined ? { correlationAttribute: o.correlationAttribute } : {}),
  };
}
