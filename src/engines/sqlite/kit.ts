import { existsSync } from "node:fs";
import type { EngineKit } from "../kit.js";
import { SqliteStateAdmin } from "./admin.js";
import { defaultDriver, openConnection } from "./connection.js";
import { sqliteBackend } from "./sim-backend.js";

const DEFAULT_TABLE = "eonce_state";

/** SQLite: a file the operator names; the simulator runs each history on a database in memory. */
export const sqliteKit: EngineKit = {
  openAdmin: async (c, context) => {
    const file = c.file as string; // the registry entry requires it
    // The store would create a missing file or table: an operator's typo must not make an empty one.
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
    return new SqliteStateAdmin({ filename: file, tableName: c.table });
  },
  openSimEnv: async () => ({ backend: () => sqliteBackend(), close: async () => {} }),
  where: (c) => `sqlite ${c.file ?? ""}`,
};
