import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SqliteFencedSink, SqliteOutbox, SqliteStore } from "../../../src/engines/sqlite/index.js";
import { losingResponses, type StoreUnderTest } from "../../kit/stores.js";

/** The SQLite engine of the store and guard suites (test/kit/stores.ts): a database file per suite. */
export const storesUnderTest = { sqlite: sqliteUnderTest };

async function sqliteUnderTest(): Promise<StoreUnderTest> {
  // A database file per suite (WAL, as in use), removed after. `normal`: no fsync per step, which would block
  // the event loop (the driver is synchronous) and upset the guard suites' timing on a loaded machine.
  const dir = mkdtempSync(join(tmpdir(), "eonce-sqlite-"));
  const filename = join(dir, "state.db");
  const sqlite = new SqliteStore({ filename, synchronous: "normal" });
  const sink = new SqliteFencedSink({ store: sqlite, tableName: "sink" });
  // A second connection to the same file: what the harness does to rows, another process could do.
  const raw = new Database(filename);
  // A relay's reader: a store (connection) of its own on the same file, as a relay process would open.
  const readers: SqliteStore[] = [];
  const reader = async () => {
    const own = new SqliteStore({ filename, synchronous: "normal" });
    readers.push(own);
    return new SqliteOutbox({ store: own });
  };
  const { store, lose } = losingResponses(sqlite);
  return {
    name: "sqlite",
    store,
    outbox: { outbox: new SqliteOutbox({ store: sqlite }), reader },
    sink: {
      atomic: (ctx, key, value) => sink.atomicPut(ctx, { key, value }),
      put: (ctx, key, value) => sink.put(ctx, { key, value }),
      read: async (key) => {
        const row = await sink.get(key);
        return row ? { value: String(row.value), srcPos: row.srcPos, srcFence: row.srcFence } : undefined;
      },
      rowFor: (stateKey) => `row-${stateKey}`,
    },
    forget: async (key) => {
      raw.prepare("DELETE FROM eonce_state WHERE state_key = ?").run(key);
    },
    loseResponses: lose,
    rawItem: async (key) => {
      const row = raw.prepare("SELECT * FROM eonce_state WHERE state_key = ?").get(key) as
        | Record<string, unknown>
        | undefined;
      if (!row) return undefined;
      const present = Object.entries(row).filter(([, v]) => v !== null);
      const bytes = present.reduce((n, [, v]) => n + Buffer.byteLength(String(v)), 0);
      return { attributes: present.map(([k]) => k).sort(), bytes };
    },
    close: async () => {
      for (const r of readers) r.close();
      raw.close();
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
