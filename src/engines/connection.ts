/**
 * Where an engine's state is, as the operator's commands (`eonce state`, `eonce run --state-store`) give it: the
 * values of their connection flags, resolved (src/cli/state/options.ts). Each engine takes only the keys its
 * registry entry lists (src/engines/registry.ts); an option of another engine is refused, not ignored.
 */
export interface EngineConnection {
  /** DynamoDB: the state table; inline engines: the user's table; SQL: default `eonce_state`. */
  table?: string | undefined;
  /** DynamoDB endpoint (e.g. DynamoDB Local); default the AWS SDK's configuration. */
  endpoint?: string | undefined;
  /** AWS region; default the AWS SDK's configuration. */
  region?: string | undefined;
  /** Inline state on DynamoDB: the table's hash key attribute. Default `pk`. */
  keyAttribute?: string | undefined;
  /** Inline state on PostgreSQL: the table's key column. Default `pk`. */
  keyColumn?: string | undefined;
  /** PostgreSQL connection string; default `DATABASE_URL`, then node-postgres's PG* environment variables. */
  databaseUrl?: string | undefined;
  /** PostgreSQL schema. Default `public`. */
  schema?: string | undefined;
  /** The SQLite database file (it must exist). */
  file?: string | undefined;
  /** A server's URL, for engines that take one (`redis://127.0.0.1:6379/0`). */
  url?: string | undefined;
  /** The prefix of every key the engine writes, for engines that share a keyspace. */
  keyPrefix?: string | undefined;
  /** Inline engines: the store's custom `rowKey`, a function export `path:export` (src/cli/load-export.ts). */
  rowKey?: string | undefined;
  /** Inline engines: `rowKey`'s inverse (row → state key), for `list`; without it a custom mapping lists rows. */
  rowKeyInverse?: string | undefined;
}

export type ConnectionKey = keyof EngineConnection;

/** Every connection option once (a missing or unknown key fails to compile). */
const EVERY_KEY: Record<ConnectionKey, true> = {
  table: true,
  endpoint: true,
  region: true,
  keyAttribute: true,
  keyColumn: true,
  databaseUrl: true,
  schema: true,
  file: true,
  url: true,
  keyPrefix: true,
  rowKey: true,
  rowKeyInverse: true,
};

/** Every connection option, for checks at run time (an engine's lists, src/engines/registry.ts). */
export const CONNECTION_KEYS: readonly ConnectionKey[] = Object.keys(EVERY_KEY) as ConnectionKey[];
