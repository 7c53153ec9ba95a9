import * as opt from "../core/options.js";
import type { EngineConnection } from "../engines/connection.js";
import { AUDIT_ENGINE_NAMES, type EngineName, engine } from "../engines/registry.js";
import type { FlagSpec } from "./options.js";
import { CONNECTION_FLAGS, STATE_CONNECTION_OPTIONS } from "./state/options.js";

/** The connection options that reach a table of the audited engines (those with an `auditTable`). */
const TABLE_CONNECTION_KEYS = ["endpoint", "region", "databaseUrl", "schema", "file"] as const;

/** Which engine `eonce audit table` reads, and how to reach it. Each engine takes only its own flags. */
export interface AuditConnectionOptions
  extends Pick<EngineConnection, (typeof TABLE_CONNECTION_KEYS)[number]> {
  /** Default `dynamodb`. */
  engine?: EngineName;
}

/** The engine, and the connection flags of `eonce state` (src/cli/state/options.ts) that reach its table. */
export const AUDIT_CONNECTION_OPTIONS = opt.schemaFor<AuditConnectionOptions>()({
  engine: opt.oneOf(AUDIT_ENGINE_NAMES, { default: "dynamodb", doc: "the table's engine" }),
  ...opt.pickFields(STATE_CONNECTION_OPTIONS, TABLE_CONNECTION_KEYS),
});

export const AUDIT_CONNECTION_FLAGS: { [K in keyof typeof AUDIT_CONNECTION_OPTIONS]?: FlagSpec } = {
  engine: { value: "<engine>" },
  ...Object.fromEntries(TABLE_CONNECTION_KEYS.map((key) => [key, CONNECTION_FLAGS[key]])),
};

export type ResolvedAuditConnection = opt.Resolved<typeof AUDIT_CONNECTION_OPTIONS>;

/** Each connection flag's and engine-only audit option's attribute (commander's), and its flag. */
const ENGINE_FLAGS: Record<string, string> = {
  endpoint: "--endpoint",
  region: "--region",
  segments: "--segments",
  consistentRead: "--consistent-read",
  databaseUrl: "--database-url",
  schema: "--schema",
  file: "--file",
};

/** Whether engine `name` takes `attribute`: a connection option of its, or an audit option of its own. */
function takes(name: string, attribute: string): boolean {
  const e = engine(name);
  return (
    (e.connection as readonly string[]).includes(attribute) || (e.auditOptions?.includes(attribute) ?? false)
  );
}

/**
 * Eager checks: the values, then the rules that relate them. `given` says whether a flag was on the command line
 * (a default is not), so `--segments 8 --engine postgres` is refused rather than ignored.
 */
export function resolveAuditConnection(
  what: string,
  options: AuditConnectionOptions,
  given: (attribute: string) => boolean,
): ResolvedAuditConnection {
  const o = opt.resolveOptions(what, AUDIT_CONNECTION_OPTIONS, options);
  for (const [attribute, flag] of Object.entries(ENGINE_FLAGS))
    opt.optionsRule(
      what,
      !given(attribute) || takes(o.engine, attribute),
      `${flag} is not for --engine ${o.engine}`,
    );
  for (const key of engine(o.engine).requires)
    if ((TABLE_CONNECTION_KEYS as readonly string[]).includes(key))
      opt.optionsRule(
        what,
        o[key as (typeof TABLE_CONNECTION_KEYS)[number]] !== undefined,
        `--engine ${o.engine} needs ${ENGINE_FLAGS[key]} ${CONNECTION_FLAGS[key]?.value ?? "<name>"}`,
      );
  return o;
}
