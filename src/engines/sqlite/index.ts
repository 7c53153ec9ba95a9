/**
 * The SQLite engine (`better-sqlite3`, or `node:sqlite`): the store and its fenced sink, for the processes
 * of one machine.
 * @module effectively-once/engines/sqlite
 */
// The SQLite state store and its fenced sink (better-sqlite3, an optional peer dependency, or node:sqlite).
// Named exports only (test/exports.test.ts pins them); SQL and row codecs stay internal.
export { isSqliteAtomicWrite, type SqliteAtomicWrite } from "./atomic-write.js";
export type { SqliteDriver, SqlParams, SqlValue } from "./connection.js";
export { SqliteOutbox, type SqliteOutboxOptions } from "./outbox.js";
export {
  SqliteFencedSink,
  type SqliteFencedSinkOptions,
  type SqliteFenceSource,
  type SqliteSinkRow,
} from "./sink.js";
export { SqliteStepEffects, type SqliteStepEffectsOptions } from "./step-effects.js";
export { SqliteStore, type SqliteStoreOptions } from "./store.js";
