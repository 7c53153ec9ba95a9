import { existsSync } from "node:fs";
import type { StateAdmin } from "../../core/state-admin.js";
import { DynamoDBStateAdmin } from "../../stores/dynamodb/admin.js";
import { InlineStateAdmin } from "../../stores/dynamodb/inline-admin.js";
import { PostgresStateAdmin } from "../../stores/postgres/admin.js";
import { InlinePostgresStateAdmin } from "../../stores/postgres/inline-admin.js";
import { SqliteStateAdmin } from "../../stores/sqlite/admin.js";
import { defaultDriver, openConnection } from "../../stores/sqlite/connection.js";
import { dynamoDBClientFor } from "../aws-connection.js";
import { StateUsageError } from "./errors.js";
import type { ResolvedConnection } from "./options.js";

/**
 * The admin of the store the options name. DynamoDB takes the AWS SDK's standard configuration (credentials from the
 * environment or the profile) with the endpoint and region given; PostgreSQL loads node-postgres (an optional peer)
 * only when asked for. Nothing is sent yet: a bad connection shows on the first request.
 */
export async function openAdmin(o: ResolvedConnection): Promise<StateAdmin> {
  switch (o.store) {
    case "dynamodb":
    case "dynamodb-inline": {
      const client = dynamoDBClientFor(o);
      const tableName = o.table as string; // resolveConnection requires it
      return o.store === "dynamodb"
        ? new DynamoDBStateAdmin({ client, tableName })
        : new InlineStateAdmin({ client, tableName, keyAttribute: o.keyAttribute });
    }
    case "postgres":
    case "postgres-inline":
      return openPostgres(o);
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

async function openPostgres(o: ResolvedConnection): Promise<StateAdmin> {
  let Pool: typeof import("pg").Pool;
  try {
    ({ Pool } = (await import("pg")).default);
  } catch (cause) {
    throw new StateUsageError(`--store ${o.store} needs node-postgres: npm i pg`, { cause });
  }
  const pool = new Pool({ ...(o.databaseUrl ? { connectionString: o.databaseUrl } : {}), max: 2 });
  try {
    if (o.store === "postgres") return new PostgresStateAdmin({ pool, schema: o.schema, table: o.table });
    // resolveConnection requires the table.
    return new InlinePostgresStateAdmin({
      pool,
      schema: o.schema,
      table: o.table as string,
      keyColumn: o.keyColumn,
    });
  } catch (error) {
    await pool.end();
    throw error;
  }
}
