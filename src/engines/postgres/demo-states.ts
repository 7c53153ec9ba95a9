import type { DemoStates } from "../engine.js";

/**
 * `eonce demo --state-store postgres`: a table per run on a PostgreSQL of the demo's own
 * (src/local/emulators/postgres-local.ts), unless DATABASE_URL names a running one; dropped at the end.
 */
export async function postgresDemoStates(): Promise<DemoStates> {
  const [{ default: pg }, { migrate, PostgresStore }] = await Promise.all([
    import("pg"),
    import("./index.js"),
  ]);
  const { startPostgresLocal } = await import("../../local/emulators/postgres-local.js");
  const server = process.env.DATABASE_URL ? undefined : await startPostgresLocal();
  const pool = new pg.Pool({ connectionString: server?.url ?? process.env.DATABASE_URL, max: 16 });
  // A crashed run's client is left checked out (as a crash leaves it); the server's stop ends it.
  pool.on("error", () => {});
  const tables: string[] = [];
  return {
    async open(_, name) {
      const table = `eonce_demo_${name.replaceAll("-", "_")}`;
      await migrate(pool, { table });
      tables.push(table);
      return new PostgresStore({ pool, table });
    },
    async close() {
      for (const t of tables) await pool.query(`DROP TABLE IF EXISTS "${t}"`).catch(() => {});
      await pool.end();
      await server?.stop();
    },
  };
}
