import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StateStore } from "../../core/store.js";
import { MemoryStore } from "../../engines/memory/store.js";
import type { LocalRuntime } from "../../local/runtime.js";

/** The engines `eonce demo --state-store` keeps the guard's state in (the inline kinds need the user's rows). */
export const DEMO_STATE_STORES = ["dynamodb", "postgres", "sqlite", "valkey", "memory"] as const;
export type DemoStateStoreKind = (typeof DEMO_STATE_STORES)[number];

/**
 * Where the demo's guarded runs keep their state: one store per run, named after it (a table, a schema's table,
 * a file, a key prefix). DynamoDB is the runtime's DynamoDB Local; PostgreSQL and Valkey are servers of the demo's
 * own (src/local/emulators/), unless DATABASE_URL or VALKEY_URL name running ones; SQLite a file in a temp folder.
 */
export interface DemoStates {
  kind: DemoStateStoreKind;
  /** A new store for the run `name` (`[a-z0-9-]`). */
  open(runtime: LocalRuntime, name: string): Promise<StateStore>;
  close(): Promise<void>;
}

export async function openDemoStates(kind: DemoStateStoreKind): Promise<DemoStates | undefined> {
  switch (kind) {
    case "dynamodb":
      return undefined;
    case "memory":
      return { kind, open: async () => new MemoryStore(), close: async () => {} };
    case "sqlite": {
      const { SqliteStore } = await import("../../engines/sqlite/store.js");
      const dir = mkdtempSync(join(tmpdir(), "eonce-demo-sqlite-"));
      return {
        kind,
        open: async (_, name) => new SqliteStore({ filename: join(dir, `${name}.db`) }),
        close: async () => rmSync(dir, { recursive: true, force: true }),
      };
    }
    case "postgres":
      return postgresStates();
    case "valkey":
      return valkeyStates();
  }
}

async function postgresStates(): Promise<DemoStates> {
  const [{ default: pg }, { migrate, PostgresStore }] = await Promise.all([
    import("pg"),
    import("../../engines/postgres/index.js"),
  ]);
  const { startPostgresLocal } = await import("../../local/emulators/postgres-local.js");
  const server = process.env.DATABASE_URL ? undefined : await startPostgresLocal();
  const pool = new pg.Pool({ connectionString: server?.url ?? process.env.DATABASE_URL, max: 16 });
  // A crashed run's client is left checked out (as a crash leaves it); the server's stop ends it.
  pool.on("error", () => {});
  const tables: string[] = [];
  return {
    kind: "postgres",
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

async function valkeyStates(): Promise<DemoStates> {
  const [{ Redis }, { ValkeyStore }] = await Promise.all([
    import("ioredis"),
    import("../../engines/valkey/store.js"),
  ]);
  const { startValkeyLocal } = await import("../../local/emulators/valkey-local.js");
  const server = process.env.VALKEY_URL ? undefined : await startValkeyLocal();
  const client = new Redis(server?.url ?? (process.env.VALKEY_URL as string), { maxRetriesPerRequest: 2 });
  const prefixes: string[] = [];
  return {
    kind: "valkey",
    async open(_, name) {
      prefixes.push(`eonce-demo:${name}:`);
      return new ValkeyStore({ client, keyPrefix: `eonce-demo:${name}:` });
    },
    async close() {
      if (!server) {
        for (const prefix of prefixes) {
          const keys = await client.keys(`${prefix}*`);
          if (keys.length > 0) await client.del(...keys);
        }
      }
      client.disconnect();
      await server?.stop();
    },
  };
}
