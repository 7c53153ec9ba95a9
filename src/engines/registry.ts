/**
 * The engines: the one list that the simulator (`npm run chaos -- --store`), `eonce state --store`, `eonce run
 * --state-store`, the test kit (`EONCE_STORES`) and vitest.config.ts read. Adding an engine is one entry here and a
 * folder of its own (docs/store-authors.md).
 *
 * An entry is data and a loader: nothing of an engine is imported until its kit is asked for, so the CLI and the
 * test config load this file without loading any engine or its client library.
 */
import type { ConnectionKey } from "./connection.js";
import type { EngineKit } from "./kit.js";

export interface EngineEntry {
  readonly name: string;
  /** Behind a server (DynamoDB Local, PostgreSQL, …): integration tests, the simulator's small profile, lanes. */
  readonly server: boolean;
  /** The guard's state in the user's own rows (src/core/state-key.ts `inlineRowKey`). */
  readonly inline: boolean;
  /** The connection options this engine takes (src/engines/connection.ts), and those it cannot do without. */
  readonly connection: readonly ConnectionKey[];
  readonly requires: readonly ConnectionKey[];
  readonly kit: () => Promise<EngineKit>;
  /** Its folder under src/engines and test/engines (the inline engines share their engine's). */
  readonly folder: string;
}

const ROW_MAPPING = ["rowKey", "rowKeyInverse"] as const;

export const ENGINES = [
  {
    name: "dynamodb",
    folder: "dynamodb",
    server: true,
    inline: false,
    connection: ["endpoint", "region"],
    requires: ["table"],
    kit: async () => (await import("./dynamodb/kit.js")).dynamodbKit,
  },
  {
    name: "dynamodb-inline",
    folder: "dynamodb",
    server: true,
    inline: true,
    connection: ["endpoint", "region", "keyAttribute", ...ROW_MAPPING],
    requires: ["table"],
    kit: async () => (await import("./dynamodb/kit.js")).dynamodbInlineKit,
  },
  {
    name: "memory",
    folder: "memory",
    server: false,
    inline: false,
    connection: [],
    requires: [],
    kit: async () => (await import("./memory/kit.js")).memoryKit,
  },
  {
    name: "postgres",
    folder: "postgres",
    server: true,
    inline: false,
    connection: ["databaseUrl", "schema"],
    requires: [],
    kit: async () => (await import("./postgres/kit.js")).postgresKit,
  },
  {
    name: "postgres-inline",
    folder: "postgres",
    server: true,
    inline: true,
    connection: ["databaseUrl", "schema", "keyColumn", ...ROW_MAPPING],
    requires: ["table"],
    kit: async () => (await import("./postgres/kit.js")).postgresInlineKit,
  },
  {
    name: "sqlite",
    folder: "sqlite",
    server: false,
    inline: false,
    connection: ["file"],
    requires: ["file"],
    kit: async () => (await import("./sqlite/kit.js")).sqliteKit,
  },
  {
    name: "valkey",
    folder: "valkey",
    server: true,
    inline: false,
    connection: ["url", "keyPrefix"],
    requires: [],
    kit: async () => (await import("./valkey/kit.js")).valkeyKit,
  },
] as const satisfies readonly EngineEntry[];

export type StoreName = (typeof ENGINES)[number]["name"];

export const STORE_NAMES: readonly StoreName[] = ENGINES.map((e) => e.name);

/** The inline engines. */
export const INLINE_STORE_NAMES: readonly StoreName[] = ENGINES.filter((e) => e.inline).map((e) => e.name);

/** The engines behind a server. */
export const SERVER_STORE_NAMES: readonly StoreName[] = ENGINES.filter((e) => e.server).map((e) => e.name);

export function isStoreName(value: string): value is StoreName {
  return (STORE_NAMES as readonly string[]).includes(value);
}

/** The registry entry of `name`. */
export function engine(name: StoreName): EngineEntry {
  return ENGINES.find((e) => e.name === name) as EngineEntry;
}

/** The kit of `name`: its modules are loaded now. */
export function engineKit(name: StoreName): Promise<EngineKit> {
  return engine(name).kit();
}
