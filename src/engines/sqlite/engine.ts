import type { EngineConnection } from "../connection.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import type { Engine, OpenAdminContext } from "../engine.js";

const DEFAULT_TABLE = "eonce_state";

/** The admin of an existing file and table: the store would create a missing one, and an operator's typo must not. */
async function openAdmin(c: EngineConnection, context: OpenAdminContext) {
  const { existsSync } = await import("node:fs");
  const { defaultDriver, openConnection } = await import("./connection.js");
  const file = c.file as string; // the engine requires it
  if (!existsSync(file)) throw context.usage(`no SQLite database at ${file}`);
  const db = openConnection(file, defaultDriver());
  try {
    const table = c.table ?? DEFAULT_TABLE;
    const found = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = @name")
      .get({ name: table });
    if (!found) throw context.usage(`no table ${JSON.stringify(table)} in ${file}`);
  } finally {
    db.close();
  }
  const { SqliteStateAdmin } = await import("./admin.js");
  return new SqliteStateAdmin({ filename: file, tableName: c.table });
}

/** SQLite: a file the operator names; the simulator runs each history on a database in memory. */
export const sqliteEngine = {
  name: "sqlite",
  displayName: "SQLite",
  folder: "sqlite",
  server: false,
  inline: false,
  connection: ["file"],
  requires: ["file"],
  env: { file: "STATE_FILE" },
  limits: {
    // The same default as DynamoDB's (a store's maxResultBytes raises it, up to 64 MB).
    maxResultBytes: DYNAMODB_MAX_RESULT_BYTES,
    // No limit of SQLite's, but a step holds the database's write lock while its writes run: 1000 statements stay
    // within milliseconds, and a runaway loop fails clearly.
    maxWritesPerCommit: 1000,
  },
  durable: true,
  serverFaults: [],
  openAdmin,
  // A file per run in a temp folder, removed at the end.
  openDemoStates: async () => {
    const [{ mkdtempSync, rmSync }, { tmpdir }, { join }] = await Promise.all([
      import("node:fs"),
      import("node:os"),
      import("node:path"),
    ]);
    const { SqliteStore } = await import("./store.js");
    const dir = mkdtempSync(join(tmpdir(), "eonce-demo-sqlite-"));
    return {
      open: async (_, name) => new SqliteStore({ filename: join(dir, `${name}.db`) }),
      close: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
  openSimEnv: async () => {
    const { sqliteBackend } = await import("./sim-backend.js");
    return { backend: () => sqliteBackend(), close: async () => {} };
  },
  auditCost: (r, pace) => [`read ${r.scannedCount} rows in one statement (one snapshot, read-only), ${pace}`],
  auditTable: async (c, o) => {
    const { auditSqliteTable } = await import("./audit-rows.js");
    const { segments: _segments, consistentRead: _consistent, ...rows } = o;
    return auditSqliteTable({ ...rows, file: c.file as string });
  },
  where: (c) => `sqlite ${c.file ?? ""}`,
} as const satisfies Engine;
