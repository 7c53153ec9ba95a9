import { InvalidArgumentError } from "commander";
import * as opt from "../../core/options.js";
import type { StateStatus } from "../../core/state.js";
import { FORGET_OPTIONS } from "../../core/state-admin.js";
import type { EngineConnection } from "../../engines/connection.js";
import { AWS_CONNECTION_FIELDS } from "../../engines/dynamodb/connection.js";
import {
  ADMIN_ENGINE_NAMES,
  ENGINE_MODES,
  type EngineName,
  engine,
  INLINE_ENGINE_NAMES,
  inlineAlias,
} from "../../engines/registry.js";
import type { FlagSpec } from "../options.js";

/**
 * The engines `eonce state` connects to: every engine with an admin (src/engines/registry.ts), not the
 * in-process memory store. Live: an engine registered later joins it.
 */
export type StateStoreKind = Exclude<EngineName, "memory">;
export const STATE_STORE_KINDS: readonly StateStoreKind[] = ADMIN_ENGINE_NAMES as readonly StateStoreKind[];

/**
 * A field naming one of `names` (live: checked when it runs), or a deprecated `<engine>-inline` name, which
 * `resolveConnection` reads as the engine with `--inline`. Help lists the names only.
 */
export function engineField(
  names: readonly StateStoreKind[],
  spec: { doc: string; default: StateStoreKind },
): opt.Field<StateStoreKind, true>;
export function engineField(
  names: readonly StateStoreKind[],
  spec: { doc: string },
): opt.Field<StateStoreKind, false>;
export function engineField(
  names: readonly StateStoreKind[],
  spec: { doc: string; default?: StateStoreKind },
): opt.Field<StateStoreKind> {
  const field = opt.oneOf(names, spec);
  return {
    ...field,
    // No commander choices: they would refuse the deprecated names.
    choices: undefined,
    check: (value: unknown) =>
      typeof value === "string" && inlineAlias(value) !== undefined ? value : field.check(value),
    get doc() {
      return `${spec.doc}: ${names.join(", ")}`;
    },
  };
}

/**
 * Where the state is: the store kind and how to reach it (src/engines/connection.ts). Each kind takes only the
 * options its registry entry lists.
 */
export interface StateConnectionOptions extends EngineConnection {
  /** The engine. Default `dynamodb`. (`dynamodb-inline`, `postgres-inline`: deprecated, the engine and `inline`.) */
  store?: StateStoreKind;
  /** The engine's inline mode: the guard's state in the user's own rows (src/engines/engine.ts `inlineMode`). */
  inline?: boolean;
}

/** The engines that take connection option `key`, for its flag's help: `postgres --inline`. */
const takers = (key: keyof EngineConnection) =>
  [
    ...new Set(
      ENGINE_MODES.filter((e) => (e.connection as readonly string[]).includes(key)).map(
        (e) => `${e.name}${e.inline ? " --inline" : ""}`,
      ),
    ),
  ].join(", ");

/** A function export, `path:export`. */
const exportSpec = (doc: string) =>
  opt.string({ pattern: /\S/, expected: "a module and export, path:export", doc });

export const STATE_CONNECTION_OPTIONS = opt.schemaFor<StateConnectionOptions>()({
  store: engineField(STATE_STORE_KINDS, { default: "dynamodb", doc: "the state's engine" }),
  inline: opt.boolean({
    doc: `the guard's state inline in your table's rows (${INLINE_ENGINE_NAMES.join(", ")}): --table names it`,
  }),
  table: opt.string({
    doc: "state table (DynamoDB: required; --inline: your table, required; SQL: default eonce_state)",
  }),
  ...AWS_CONNECTION_FIELDS,
  keyAttribute: opt.string({ doc: `${takers("keyAttribute")}: the table's hash key attribute (default pk)` }),
  keyColumn: opt.string({ doc: `${takers("keyColumn")}: the table's key column (default pk)` }),
  databaseUrl: opt.string({
    doc: `${takers("databaseUrl")}: the connection string (default: DATABASE_URL, then the PG* environment variables)`,
  }),
  schema: opt.string({ doc: `${takers("schema")}: the schema (default public)` }),
  file: opt.string({ doc: `${takers("file")}: the database file` }),
  url: opt.string({
    pattern: /^\S+:\/\/\S*$/,
    expected: "a URL",
    doc: "a server's URL, for engines that take one",
  }),
  keyPrefix: opt.string({ doc: "the prefix of the engine's keys, for engines that share a keyspace" }),
  rowKey: exportSpec("--inline: the store's custom rowKey (state key → row), a function export"),
  rowKeyInverse: exportSpec("--inline: the custom rowKey's inverse (row → state key), to name listed rows"),
});

export const CONNECTION_FLAGS: { [K in keyof typeof STATE_CONNECTION_OPTIONS]?: FlagSpec } = {
  store: { value: "<kind>" },
  endpoint: { value: "<url>" },
  databaseUrl: { value: "<url>" },
  schema: { value: "<name>" },
  keyAttribute: { value: "<name>" },
  keyColumn: { value: "<name>" },
  file: { value: "<path>" },
  url: { value: "<url>" },
  keyPrefix: { value: "<prefix>" },
  rowKey: { value: "<path:export>" },
  rowKeyInverse: { value: "<path:export>" },
};

export type ResolvedConnection = opt.Resolved<typeof STATE_CONNECTION_OPTIONS>;

/** Each connection option's flag, for messages; a command that names them otherwise (`eonce run`) passes its own. */
export type ConnectionFlagNames = Record<keyof StateConnectionOptions, string>;

export const STATE_FLAG_NAMES: ConnectionFlagNames = {
  store: "--store",
  inline: "--inline",
  table: "--table",
  endpoint: "--endpoint",
  region: "--region",
  keyAttribute: "--key-attribute",
  keyColumn: "--key-column",
  databaseUrl: "--database-url",
  schema: "--schema",
  file: "--file",
  url: "--url",
  keyPrefix: "--key-prefix",
  rowKey: "--row-key",
  rowKeyInverse: "--row-key-inverse",
};

/** Eager checks: values, then the rules that relate them (an option of another kind is a mistake, not ignored). */
export function resolveConnection(
  what: string,
  options: StateConnectionOptions,
  flags: ConnectionFlagNames = STATE_FLAG_NAMES,
): ResolvedConnection {
  const given = opt.resolveOptions(what, STATE_CONNECTION_OPTIONS, options);
  const alias = inlineAlias(given.store);
  const o = alias === undefined ? given : { ...given, store: alias, inline: true };
  opt.optionsRule(
    what,
    !o.inline || INLINE_ENGINE_NAMES.includes(o.store),
    `${flags.inline} is not for ${flags.store} ${o.store} (engines with inline state: ${INLINE_ENGINE_NAMES.join(", ")})`,
  );
  const e = engine(o.store, o);
  const store = storeFlags(o, flags);
  for (const key of Object.keys(flags) as (keyof StateConnectionOptions)[]) {
    if (key === "store" || key === "inline" || key === "table") continue;
    opt.optionsRule(
      what,
      o[key] === undefined || (e.connection as readonly string[]).includes(key),
      `${flags[key]} is not for ${store}`,
    );
  }
  for (const key of e.requires)
    opt.optionsRule(
      what,
      o[key] !== undefined,
      `${store} needs ${flags[key]} ${CONNECTION_FLAGS[key]?.value ?? "<name>"}`,
    );
  opt.optionsRule(
    what,
    o.rowKeyInverse === undefined || o.rowKey !== undefined,
    `${flags.rowKeyInverse} is the inverse of ${flags.rowKey}: give ${flags.rowKey} too`,
  );
  return o;
}

/** The flags that select the connection's engine, for messages: `--store postgres --inline`. */
export function storeFlags(o: ResolvedConnection, flags: ConnectionFlagNames = STATE_FLAG_NAMES): string {
  return `${flags.store} ${o.store}${o.inline ? ` ${flags.inline}` : ""}`;
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
