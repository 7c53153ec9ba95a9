import { InvalidArgumentError } from "commander";
import * as opt from "../../core/options.js";
import type { StateStatus } from "../../core/state.js";
import { FORGET_OPTIONS } from "../../core/state-admin.js";
import { AWS_CONNECTION_FIELDS, type AwsConnection } from "../aws-connection.js";
import type { FlagSpec } from "../options.js";

/** The store kinds `eonce state` connects to: every shipped store but the in-process memory store. */
export const STATE_STORE_KINDS = [
  "dynamodb",
  "dynamodb-inline",
  "postgres",
  "postgres-inline",
  "sqlite",
] as const;
export type StateStoreKind = (typeof STATE_STORE_KINDS)[number];

/** Where the state is: the store kind and how to reach it. Each kind takes only its own options. */
export interface StateConnectionOptions extends AwsConnection {
  /** Default `dynamodb`. */
  store?: StateStoreKind;
  /** DynamoDB: the state table (required); inline: the user's table (required); SQL: default `eonce_state`. */
  table?: string;
  /** Inline state on DynamoDB: the table's hash key attribute. Default `pk`. */
  keyAttribute?: string;
  /** Inline state on PostgreSQL: the table's key column. Default `pk`. */
  keyColumn?: string;
  /** PostgreSQL connection string; default node-postgres's PG* environment variables. */
  databaseUrl?: string;
  /** PostgreSQL schema. Default `public`. */
  schema?: string;
  /** The SQLite database file (it must exist). */
  file?: string;
}

export const STATE_CONNECTION_OPTIONS = opt.schemaFor<StateConnectionOptions>()({
  store: opt.oneOf(STATE_STORE_KINDS, { default: "dynamodb", doc: "the state store's kind" }),
  table: opt.string({
    doc: "state table (DynamoDB: required; inline kinds: your table, required; SQL: default eonce_state)",
  }),
  ...AWS_CONNECTION_FIELDS,
  keyAttribute: opt.string({ doc: "dynamodb-inline: the table's hash key attribute (default pk)" }),
  keyColumn: opt.string({ doc: "postgres-inline: the table's key column (default pk)" }),
  databaseUrl: opt.string({
    doc: "PostgreSQL connection string (default: the PG* environment variables)",
  }),
  schema: opt.string({ doc: "PostgreSQL schema (default public)" }),
  file: opt.string({ doc: "SQLite database file" }),
});

export const CONNECTION_FLAGS: { [K in keyof typeof STATE_CONNECTION_OPTIONS]?: FlagSpec } = {
  store: { value: "<kind>" },
  endpoint: { value: "<url>" },
  databaseUrl: { value: "<url>" },
  keyAttribute: { value: "<name>" },
  keyColumn: { value: "<name>" },
  file: { value: "<path>" },
};

export type ResolvedConnection = opt.Resolved<typeof STATE_CONNECTION_OPTIONS>;

/** Which options each kind takes, besides `store` and `table`. */
const OWN: Record<StateStoreKind, readonly (keyof StateConnectionOptions)[]> = {
  dynamodb: ["endpoint", "region"],
  "dynamodb-inline": ["endpoint", "region", "keyAttribute"],
  postgres: ["databaseUrl", "schema"],
  "postgres-inline": ["databaseUrl", "schema", "keyColumn"],
  sqlite: ["file"],
};

const FLAG: Record<string, string> = {
  endpoint: "--endpoint",
  region: "--region",
  keyAttribute: "--key-attribute",
  keyColumn: "--key-column",
  databaseUrl: "--database-url",
  schema: "--schema",
  file: "--file",
};

/** The kinds without a default table: DynamoDB's state table, and the user's table of inline state. */
const NEEDS_TABLE: readonly StateStoreKind[] = ["dynamodb", "dynamodb-inline", "postgres-inline"];

/** Eager checks: values, then the rules that relate them (an option of another kind is a mistake, not ignored). */
export function resolveConnection(what: string, options: StateConnectionOptions): ResolvedConnection {
  const o = opt.resolveOptions(what, STATE_CONNECTION_OPTIONS, options);
  for (const [key, flag] of Object.entries(FLAG)) {
    const given = o[key as keyof ResolvedConnection] !== undefined;
    opt.optionsRule(
      what,
      !given || OWN[o.store].includes(key as keyof StateConnectionOptions),
      `${flag} is not for --store ${o.store}`,
    );
  }
  if (NEEDS_TABLE.includes(o.store))
    opt.optionsRule(what, o.table !== undefined, `--store ${o.store} needs --table <name>`);
  if (o.store === "sqlite") opt.optionsRule(what, o.file !== undefined, "--store sqlite needs --file <path>");
  return o;
}

export interface StateListOptions {
  status?: StateStatus;
  olderThanMs?: number;
  /** Default 50. */
  limit?: number;
}

export const STATE_LIST_OPTIONS = opt.schemaFor<StateListOptions>()({
  status: opt.oneOf(["running", "released", "done"], { doc: "only records of this status" }),
  olderThanMs: opt.integer({
    min: 0,
    doc: "only records whose last claim is older than this (90s, 10m, 2h, 1d)",
  }),
  limit: opt.integer({ min: 1, max: 100_000, default: 50, doc: "at most n records" }),
});

export const LIST_FLAGS: { [K in keyof typeof STATE_LIST_OPTIONS]?: FlagSpec } = {
  status: { value: "<status>" },
  olderThanMs: { name: "older-than", value: "<duration>", parse: parseDuration },
};

/** `forget`'s own flags: the clock skew grace and --force (core/state-admin.ts FORGET_OPTIONS). */
export const STATE_FORGET_OPTIONS = opt.pickFields(FORGET_OPTIONS, ["clockSkewMs", "force"]);

export interface StateReleaseOptions {
  fence: number;
}

export const STATE_RELEASE_OPTIONS = opt.schemaFor<StateReleaseOptions>()({
  fence: opt.required(
    opt.integer({ min: 0, doc: "the fence the record must still hold (from eonce state get)" }),
  ),
});

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `10m`, `2h`, `1.5h`, `500ms`, `1d` → milliseconds. A bare number is refused: its unit would be a guess. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!m) throw new InvalidArgumentError("expected a duration like 90s, 10m, 2h (units ms, s, m, h, d)");
  return Math.round(Number(m[1]) * (UNITS_MS[m[2] as string] as number));
}
