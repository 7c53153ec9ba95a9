import { AUDIT_ENGINES, type AuditEngine } from "../audit/table-audit.js";
import * as opt from "../core/options.js";
import type { EngineConnection } from "../engines/connection.js";
import type { FlagSpec } from "./options.js";
import { CONNECTION_FLAGS, STATE_CONNECTION_OPTIONS } from "./state/options.js";

/** The connection options that reach a table of the audited engines: DynamoDB's, PostgreSQL's and SQLite's. */
const TABLE_CONNECTION_KEYS = ["endpoint", "region", "databaseUrl", "schema", "file"] as const;

/** Which engine `eonce audit table` reads, and how to reach it. Each engine takes only its own flags. */
export interface AuditConnectionOptions
  extends Pick<EngineConnection, (typeof TABLE_CONNECTION_KEYS)[number]> {
  /** Default `dynamodb`. */
  engine?: AuditEngine;
}

/** The engine, and the connection flags of `eonce state` (src/cli/state/options.ts) that reach its table. */
export const AUDIT_CONNECTION_OPTIONS = opt.schemaFor<AuditConnectionOptions>()({
  engine: opt.oneOf(AUDIT_ENGINES, { default: "dynamodb", doc: "the table's engine" }),
  ...opt.pickFields(STATE_CONNECTION_OPTIONS, TABLE_CONNECTION_KEYS),
});

export const AUDIT_CONNECTION_FLAGS: { [K in keyof typeof AUDIT_CONNECTION_OPTIONS]?: FlagSpec } = {
  engine: { value: "<engine>" },
  ...Object.fromEntries(TABLE_CONNECTION_KEYS.map((key) => [key, CONNECTION_FLAGS[key]])),
};

export type ResolvedAuditConnection = opt.Resolved<typeof AUDIT_CONNECTION_OPTIONS>;

/** The flags that belong to one engine (commander's attribute names): given for another, they would be ignored. */
const ENGINE_FLAGS: Record<string, { flag: string; engine: AuditEngine }> = {
  endpoint: { flag: "--endpoint", engine: "dynamodb" },
  region: { flag: "--region", engine: "dynamodb" },
  segments: { flag: "--segments", engine: "dynamodb" },
  consistentRead: { flag: "--consistent-read", engine: "dynamodb" },
  databaseUrl: { flag: "--database-url", engine: "postgres" },
  schema: { flag: "--schema", engine: "postgres" },
  file: { flag: "--file", engine: "sqlite" },
};

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
  for (const [attribute, { flag, engine }] of Object.entries(ENGINE_FLAGS))
    opt.optionsRule(
      what,
      !given(attribute) || engine === o.engine,
      `${flag} is not for --engine ${o.engine}`,
    );
  if (o.engine === "sqlite")
    opt.optionsRule(what, o.file !== undefined, "--engine sqlite needs --file <path>");
  return o;
}
