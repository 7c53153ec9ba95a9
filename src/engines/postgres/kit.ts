import type { EngineConnection } from "../connection.js";
import type { EngineKit, OpenAdminContext } from "../kit.js";
import { PostgresStateAdmin } from "./admin.js";
import { openPostgresPool } from "./connection.js";
import { InlinePostgresStateAdmin } from "./inline-admin.js";
import { postgresInlineBackend } from "./inline-sim-backend.js";
import { postgresBackend, postgresChaosEnv } from "./sim-backend.js";

/** The admin built on a new pool; the pool is ended if building fails. */
async function withPool<A>(
  c: EngineConnection,
  context: OpenAdminContext,
  build: (pool: import("pg").Pool) => Promise<A>,
) {
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

async function openSimEnv(inline: boolean) {
  const env = await postgresChaosEnv();
  return {
    backend: (o: { rowKey?: (stateKey: string) => string }) =>
      inline ? postgresInlineBackend(env, o.rowKey) : postgresBackend(env),
    close: () => env.close(),
  };
}

const where = (store: string) => (c: EngineConnection) =>
  `${store} ${c.schema ?? "public"}.${c.table ?? "eonce_state"}`;

/** PostgreSQL with a state table of its own. */
export const postgresKit: EngineKit = {
  openAdmin: (c, context) =>
    withPool(c, context, async (pool) => {
      return new PostgresStateAdmin({ pool, schema: c.schema, table: c.table });
    }),
  openSimEnv: () => openSimEnv(false),
  where: where("postgres"),
};

/** PostgreSQL with the state inline, in the user's own rows. */
export const postgresInlineKit: EngineKit = {
  openAdmin: (c, context) =>
    withPool(c, context, async (pool) => {
      return new InlinePostgresStateAdmin({
        pool,
        schema: c.schema,
        table: c.table as string, // the registry entry requires it
        keyColumn: c.keyColumn,
        ...context.mapping,
      });
    }),
  openSimEnv: () => openSimEnv(true),
  where: where("postgres-inline"),
};
