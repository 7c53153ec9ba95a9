import { existsSync } from "node:fs";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { InlineRowMapping, StateAdmin } from "../../core/state-admin.js";
import { DynamoDBStateAdmin } from "../../stores/dynamodb/admin.js";
import { InlineStateAdmin } from "../../stores/dynamodb/inline-admin.js";
import { PostgresStateAdmin } from "../../stores/postgres/admin.js";
import { InlinePostgresStateAdmin } from "../../stores/postgres/inline-admin.js";
import { SqliteStateAdmin } from "../../stores/sqlite/admin.js";
import { defaultDriver, openConnection } from "../../stores/sqlite/connection.js";
import { dynamoDBClientFor } from "../aws-connection.js";
import { loadExport } from "../load-export.js";
import { postgresConnectionString } from "../postgres-connection.js";
import { StateUsageError } from "./errors.js";
import { type ConnectionFlagNames, type ResolvedConnection, STATE_FLAG_NAMES } from "./options.js";

/** What the caller already has: a DynamoDB client (the admin owns it: `close` destroys it), its flags' names. */
export interface OpenAdminContext {
  /** Default: a client with the SDK's configuration and the options' endpoint and region. */
  dynamodb?: DynamoDBClient;
  /** The flags' names, for messages (`eonce run` names some otherwise). */
  flags?: ConnectionFlagNames;
}

/**
 * The admin of the store the options name. DynamoDB takes the AWS SDK's standard configuration (credentials from the
 * environment or the profile) with the endpoint and region given; PostgreSQL loads node-postgres (an optional peer)
 * only when asked for. A custom row mapping (`--row-key`) is loaded here. Nothing is sent yet: a bad connection shows
 * on the first request.
 */
export async function openAdmin(o: ResolvedConnection, context: OpenAdminContext = {}): Promise<StateAdmin> {
  switch (o.store) {
    case "dynamodb":
    case "dynamodb-inline": {
      const mapping = await loadRowMapping(o, context.flags ?? STATE_FLAG_NAMES);
      const client = context.dynamodb ?? dynamoDBClientFor(o);
      const tableName = o.table as string; // resolveConnection requires it
      return o.store === "dynamodb"
        ? new DynamoDBStateAdmin({ client, tableName })
        : new InlineStateAdmin({ client, tableName, keyAttribute: o.keyAttribute, ...mapping });
    }
    case "postgres":
    case "postgres-inline":
      return openPostgres(o, context);
    case "sqlite": {
      const file = o.file as string; // resolveConnection requires it
      // The store would create a missing file or table: an operator's typo must not make an empty one.
      if (!existsSync(file)) throw new StateUsageError(`no SQLite database at ${file}`);
      requireSqliteTable(file, o.table ?? DEFAULT_SQLITE_TABLE);
      return new SqliteStateAdmin({ filename: file, tableName: o.table });
    }
  }
}

const DEFAULT_SQLITE_TABLE = "eonce_state";

function requireSqliteTable(file: string, table: string): void {
  const db = openConnection(file, defaultDriver());
  try {
    const found = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = @name")
      .get({ name: table });
    if (!found) throw new StateUsageError(`no table ${JSON.stringify(table)} in ${file}`);
  } finally {
    db.close();
  }
}

/** The inline store's custom rowKey and its inverse, loaded from their modules; none for the default mapping. */
async function loadRowMapping(o: ResolvedConnection, flags: ConnectionFlagNames): Promise<InlineRowMapping> {
  const load = async (spec: string | undefined, flag: string, defaultName: string) => {
    if (spec === undefined) return undefined;
    try {
      return (await loadExport(spec, { defaultName, what: flag })).fn as (text: string) => string;
    } catch (cause) {
      throw new StateUsageError(`${flag}: ${cause instanceof Error ? cause.message : String(cause)}`, {
        cause,
      });
    }
  };
  const rowKey = await load(o.rowKey, flags.rowKey, "rowKey");
  const stateKeyOfRow = await load(o.rowKeyInverse, flags.rowKeyInverse, "stateKeyOfRow");
  return { ...(rowKey ? { rowKey } : {}), ...(stateKeyOfRow ? { stateKeyOfRow } : {}) };
}

async function openPostgres(o: ResolvedConnection, context: OpenAdminContext): Promise<StateAdmin> {
  let Pool: typeof import("pg").Pool;
  try {
    ({ Pool } = (await import("pg")).default);
  } catch (cause) {
    const flags = context.flags ?? STATE_FLAG_NAMES;
    throw new StateUsageError(`${flags.store} ${o.store} needs node-postgres: npm i pg`, { cause });
  }
  const mapping = await loadRowMapping(o, context.flags ?? STATE_FLAG_NAMES);
  const connectionString = postgresConnectionString(o);
  const pool = new Pool({ ...(connectionString ? { connectionString } : {}), max: 2 });
  try {
    if (o.store === "postgres") return new PostgresStateAdmin({ pool, schema: o.schema, table: o.table });
    // resolveConnection requires the table.
    return new InlinePostgresStateAdmin({
      pool,
      schema: o.schema,
      table: o.table as string,
      keyColumn: o.keyColumn,
      ...mapping,
    });
  } catch (error) {
    await pool.end();
    throw error;
  }
}
