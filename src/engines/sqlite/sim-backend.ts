import { type Backend, taggedSink } from "../../sim/backend.js";
import { quiet } from "../../sim/quiet.js";
import type { SqliteAtomicWrite } from "./atomic-write.js";
import { SqliteOutbox } from "./outbox.js";
import { SqliteFencedSink } from "./sink.js";
import { SqliteStepEffects } from "./step-effects.js";
import { SqliteStore, statementsOf } from "./store.js";

/**
 * The SQLite store on a database of its own per history (in memory: the same SQL and transactions as on a file,
 * without thousands of files), the fenced sink, and a counter table whose folded effect is an upsert in the
 * commit's transaction. Every step is synchronous inside, so the scheduler interleaves whole steps, as the write
 * lock does across processes.
 */
export function sqliteBackend(): Backend {
  const store = new SqliteStore({ filename: ":memory:" });
  const sink = new SqliteFencedSink({ store, tableName: "chaos_sink" });
  const sql = statementsOf(store);
  sql.run("CREATE TABLE chaos_count (id TEXT PRIMARY KEY, n INTEGER NOT NULL, fences TEXT NOT NULL)", {});
  return {
    name: "sqlite",
    store,
    sinkReportsItself: false,
    counter: (e, fence): SqliteAtomicWrite =>
      store.atomicWrite({
        description: `count ${e.counterId} f${fence}`,
        // Not fenced: a second application must show as a count of 2.
        sql: `INSERT INTO chaos_count (id, n, fences) VALUES (@id, 1, @fence)
ON CONFLICT (id) DO UPDATE SET n = n + 1, fences = fences || ',' || excluded.fences RETURNING 1`,
        params: { id: e.counterId, fence: String(fence) },
      }),
    sinkAtomic: taggedSink((e, pos, fence) =>
      sink.atomicPut({ position: pos, fence }, { key: e.subject, value: null }),
    ),
    sinkPut: (e, pos, fence) => sink.put({ position: pos, fence }, { key: e.subject, value: null }),
    readCounter: async (e) => {
      const row = sql.get("SELECT n, fences FROM chaos_count WHERE id = @id", { id: e.counterId });
      return row
        ? { count: Number(row.n), fences: String(row.fences).split(",").map(Number) }
        : { count: 0, fences: [] };
    },
    readSink: async (subject) => {
      const row = await sink.get(subject);
      return row ? { pos: row.srcPos, fence: row.srcFence } : undefined;
    },
    readState: async (key) => {
      const state = await store.read(key);
      return { state, bytes: state ? Buffer.byteLength(JSON.stringify(state)) : undefined };
    },
    forget: async (key) => store.forget(key),
    stepEffects: (clock) => new SqliteStepEffects({ store, tableName: "chaos_steps", clock, ...quiet() }),
    // The history's own database: its outbox table holds no other history's entries.
    outbox: async () => {
      const outbox = new SqliteOutbox({ store });
      return { outbox, reader: async () => outbox };
    },
  };
}
