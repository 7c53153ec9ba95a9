import { AUDIT_ENGINES, type AuditEngine } from "../audit/table-audit.js";
import * as opt from "../core/options.js";
import { AWS_CONNECTION_FIELDS, type AwsConnection } from "../engines/dynamodb/connection.js";
import type { FlagSpec } from "./options.js";

/** Which engine `eonce audit table` reads, and how to reach it. Each engine takes only its own flags. */
export interface AuditConnectionOptions extends AwsConnection {
  /** Default `dynamodb`. */
  engine?: AuditEngine;
  /** PostgreSQL connection string; default `DATABASE_URL`, then node-postgres's PG* environment variables. */
  databaseUrl?: string;
  /** PostgreSQL schema. Default `public`. */
  schema?: string;
  /** The SQLite database file (it must exist). */
  file?: string;
}

export const AUDIT_CONNECTION_OPTIONS = opt.schemaFor<AuditConnectionOptions>()({
  engine: opt.oneOf(AUDIT_ENGINES, { default: "dynamodb", doc: "the table's engine" }),
  ...AWS_CONNECTION_FIELDS,
  databaseUrl: opt.string({
    doc: "PostgreSQL connection string (default: DATABASE_URL, then the PG* environment variables)",
  }),
  schema: opt.string({ doc: "PostgreSQL schema (default public)" }),
  file: opt.string({ doc: "SQLite database file" }),
});

export const AUDIT_CONNECTION_FLAGS: { [K in keyof typeof AUDIT_CONNECTION_OPTIONS]?: FlagSpec } = {
  engine: { value: "<engine>" },
  endpoint: { value: "<url>" },
  databaseUrl: { value: "<url>" },
  schema: { value: "<name>" },
  file: { value: "<path>" },
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
