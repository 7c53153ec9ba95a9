/**
 * The PostgreSQL engine (install `pg`): state and SQL effects in one transaction, inline state, the fenced
 * sink, migrations.
 * @module effectively-once/engines/postgres
 */
// The PostgreSQL state store and fenced sink (node-postgres, an optional peer). Named exports only
// (test/exports.test.ts pins them); statements and row codecs stay internal.
export { isPostgresAtomicWrite, type PostgresAtomicWrite, postgresWrite } from "./atomic-write.js";
export { isRetryablePostgresError, MigrationLockTimeoutError } from "./errors.js";
export { type InlineTableOptions, migrateInline } from "./inline-schema.js";
export {
  INLINE_POSTGRES_COLUMNS,
  type InlinePostgresRowSource,
  type InlinePostgresRowWrite,
  InlinePostgresStore,
  type InlinePostgresStoreOptions,
} from "./inline-store.js";
export {
  type InlinePostgresOutboxWrite,
  OutboxTableMissingError,
  PostgresOutbox,
  type PostgresOutboxOptions,
} from "./outbox.js";
export type { PostgresClient, PostgresPool } from "./pool.js";
export { deleteExpired, type MigrateOptions, migrate, type PostgresTableOptions } from "./schema.js";
export { PostgresFencedSink, type PostgresFencedSinkOptions, type PostgresFenceSource } from "./sink.js";
export {
  createPostgresStepEffectsTable,
  PostgresStepEffects,
  type PostgresStepEffectsOptions,
  type PostgresStepEffectsTableOptions,
} from "./step-effects.js";
export { PostgresStore, type PostgresStoreOptions } from "./store.js";
