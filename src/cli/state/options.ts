import { InvalidArgumentError } from "commander";
import * as opt from "../../core/options.js";
import type { StateStatus } from "../../core/state.js";
import { FORGET_OPTIONS } from "../../core/state-admin.js";
import { STORE_NAMES, type StoreName } from "../../stores/names.js";
import { AWS_CONNECTION_FIELDS, type AwsConnection } from "../aws-connection.js";
import type { FlagSpec } from "../options.js";

/** The store kinds `eonce state` connects to: every engine (src/stores/names.ts) but the in-process memory store. */
export type StateStoreKind = Exclude<StoreName, "memory">;
export const STATE_STORE_KINDS: readonly StateStoreKind[] = STORE_NAMES.filter(
  (n): n is StateStoreKind => n !== "memory",
);

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
  /** PostgreSQL connection string; default `DATABASE_URL`, then node-postgres's PG* environment variables. */
  databaseUrl?: string;
  /** PostgreSQL schema. Default `public`. */
  schema?: string;
  /** The SQLite database file (it must exist). */
  file?: string;
  /** Inline kinds: the store's custom `rowKey`, a function export `path:export` (src/cli/load-export.ts). */
  rowKey?: string;
  /** Inline kinds: `rowKey`'s inverse (row → state key), for `list`; without it a custom mapping lists rows. */
  rowKeyInverse?: string;
}

/** A function export, `path:export`. */
const exportSpec = (doc: string) =>
  opt.string({ pattern: /\S/, expected: "a module and export, path:export", doc });

export const STATE_CONNECTION_OPTIONS = opt.schemaFor<StateConnectionOptions>()({
  store: opt.oneOf(STATE_STORE_KINDS, { default: "dynamodb", doc: "the state store's kind" }),
  table: opt.string({
    doc: "state table (DynamoDB: required; inline kinds: your table, required; SQL: default eonce_state)",
  }),
  ...AWS_CONNECTION_FIELDS,
  keyAttribute: opt.string({ doc: "dynamodb-inline: the table's hash key attribute (default pk)" }),
  keyColumn: opt.string({ doc: "postgres-inline: the table's key column (default pk)" }),
  databaseUrl: opt.string({
    doc: "PostgreSQL connection string (default: DATABASE_URL, then the PG* environment variables)",
  }),
  schema: opt.string({ doc: "PostgreSQL schema (default public)" }),
  file: opt.string({ doc: "SQLite database file" }),
  rowKey: exportSpec("inline kinds: the store's custom rowKey (state key → row), a function export"),
  rowKeyInverse: exportSpec(
    "inline kinds: the custom rowKey's inverse (row → state key), to name listed rows",
  ),
});

export const CONNECTION_FLAGS: { [K in keyof typeof STATE_CONNECTION_OPTIONS]?: FlagSpec } = {
  store: { value: "<kind>" },
  endpoint: { value: "<url>" },
  databaseUrl: { value: "<url>" },
  keyAttribute: { value: "<name>" },
  keyColumn: { value: "<name>" },
  file: { value: "<path>" },
  rowKey: { value: "<path:export>" },
  rowKeyInverse: { value: "<path:export>" },
};

export type ResolvedConnection = opt.Resolved<typeof STATE_CONNECTION_OPTIONS>;

const ROW_MAPPING = ["rowKey", "rowKeyInverse"] as const;

/** Which options each kind takes, besides `store` and `table`. */
const OWN: Record<StateStoreKind, readonly (keyof StateConnectionOptions)[]> = {
  dynamodb: ["endpoint", "region"],
  "dynamodb-inline": ["endpoint", "region", "keyAttribute", ...ROW_MAPPING],
  postgres: ["databaseUrl", "schema"],
  "postgres-inline": ["databaseUrl", "schema", "keyColumn", ...ROW_MAPPING],
  sqlite: ["file"],
};

/** Each connection option's flag, for messages; a command that names them otherwise (`eonce run`) passes its own. */
export type ConnectionFlagNames = Record<keyof StateConnectionOptions, string>;

export const STATE_FLAG_NAMES: ConnectionFlagNames = {
  store: "--store",
  table: "--table",
  endpoint: "--endpoint",
  region: "--region",
  keyAttribute: "--key-attribute",
  keyColumn: "--key-column",
  databaseUrl: "--database-url",
  schema: "--schema",
  file: "--file",
  rowKey: "--row-key",
  rowKeyInverse: "--row-key-inverse",
};

/** The kinds without a default table: DynamoDB's state table, and the user's table of inline state. */
const NEEDS_TABLE: readonly StateStoreKind[] = ["dynamodb", "dynamodb-inline", "postgres-inline"];

/** Eager checks: values, then the rules that relate them (an option of another kind is a mistake, not ignored). */
export function resolveConnection(
  what: string,
  options: StateConnectionOptions,
  flags: ConnectionFlagNames = STATE_FLAG_NAMES,
): ResolvedConnection {
  const o = opt.resolveOptions(what, STATE_CONNECTION_OPTIONS, options);
  const store = `${flags.store} ${o.store}`;
  for (const key of Object.keys(flags) as (keyof StateConnectionOptions)[]) {
    if (key === "store" || key === "table") continue;
    opt.optionsRule(
      what,
      o[key] === undefined || OWN[o.store].includes(key),
      `${flags[key]} is not for ${store}`,
    );
  }
  if (NEEDS_TABLE.includes(o.store))
    opt.optionsRule(what, o.table !== undefined, `${store} needs ${flags.table} <name>`);
  if (o.store === "sqlite")
    opt.optionsRule(what, o.file !== undefined, `${store} needs ${flags.file} <path>`);
  opt.optionsRule(
    what,
    o.rowKeyInverse === undefined || o.rowKey !== undefined,
    `${flags.rowKeyInverse} is the inverse of ${flags.rowKey}: give ${flags.rowKey} too`,
  );
  return o;
}

/** A custom row mapping without its inverse: `list` names records by their rows (docs/cli-state.md). */
export function listsByRow(o: ResolvedConnection): boolean {
  return o.rowKey !== undefined && o.rowKeyInverse === undefined;
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
