import { createRequire } from "node:module";
import { StoreError } from "../../core/errors.js";

/**
 * The little of a SQLite driver the store uses, so that better-sqlite3 and Node's built-in `node:sqlite`
 * (Node ≥ 22.5) fit behind one interface. Both are synchronous: a statement, and a transaction of several, runs
 * without yielding to the event loop, so within a process each store step is atomic by construction; across
 * processes `BEGIN IMMEDIATE` takes the database's write lock up front, so writers are serialised.
 */
export type SqlValue = string | number | bigint | null;
/** Named parameters of a statement. */
export type SqlParams = Record<string, SqlValue>;
export type SqlRow = Record<string, unknown>;

export interface SqliteStatement {
  get(params: SqlParams): unknown;
  all(params: SqlParams): unknown[];
  run(params: SqlParams): unknown;
}

export interface SqliteConnection {
  exec(sql: string): unknown;
  prepare(sql: string): SqliteStatement;
  close(): unknown;
}

/** The SQLite driver: the `better-sqlite3` package, or Node's built-in `node:sqlite` (Node ≥ 22.5). */
export type SqliteDriver = "better-sqlite3" | "node:sqlite";

const require = createRequire(import.meta.url);

/** Opens `filename` with the driver asked for. */
export function openConnection(filename: string, driver: SqliteDriver): SqliteConnection {
  if (driver === "node:sqlite") {
    const { DatabaseSync } = require("node:sqlite") as {
      DatabaseSync: new (path: string) => SqliteConnection;
    };
    return new DatabaseSync(filename);
  }
  const Database = require("better-sqlite3") as new (path: string) => SqliteConnection;
  return new Database(filename);
}

/** better-sqlite3 when installed, else `node:sqlite` when this Node has it. */
export function defaultDriver(): SqliteDriver {
  try {
    require.resolve("better-sqlite3");
    return "better-sqlite3";
  } catch {
    return "node:sqlite";
  }
}

/**
 * Statements are prepared once per connection and SQL text. Parameters are named (`@name`): each statement gets
 * exactly the ones its SQL uses (node:sqlite rejects unknown ones; better-sqlite3 rejects missing ones).
 */
export class Statements {
  readonly #cache = new Map<string, { statement: SqliteStatement; names: string[] }>();
  constructor(readonly connection: SqliteConnection) {}

  #prepared(sql: string) {
    let p = this.#cache.get(sql);
    if (!p) {
      const names = [...new Set([...sql.matchAll(/@(\w+)/g)].map((m) => m[1] as string))];
      p = { statement: this.connection.prepare(sql), names };
      this.#cache.set(sql, p);
    }
    return p;
  }

  #bind(names: string[], params: SqlParams): SqlParams {
    return Object.fromEntries(names.map((n) => [n, params[n] ?? null]));
  }

  /** The first row, or undefined. */
  get(sql: string, params: SqlParams): SqlRow | undefined {
    const p = this.#prepared(sql);
    return p.statement.get(this.#bind(p.names, params)) as SqlRow | undefined;
  }

  /** Every row (of a query, or of a write's `RETURNING`). */
  all(sql: string, params: SqlParams): SqlRow[] {
    const p = this.#prepared(sql);
    return p.statement.all(this.#bind(p.names, params)) as SqlRow[];
  }

  /** Runs a statement; returns how many rows it changed. */
  run(sql: string, params: SqlParams): number {
    const p = this.#prepared(sql);
    const out = p.statement.run(this.#bind(p.names, params)) as { changes?: number | bigint };
    return Number(out.changes ?? 0);
  }

  /**
   * One write transaction: the write lock is taken first (`BEGIN IMMEDIATE`, waiting up to the busy timeout), so
   * what `body` reads cannot change before it writes. Rolled back if `body` throws.
   */
  immediate<T>(body: () => T): T {
    this.connection.exec("BEGIN IMMEDIATE");
    try {
      const out = body();
      this.connection.exec("COMMIT");
      return out;
    } catch (error) {
      try {
        this.connection.exec("ROLLBACK");
      } catch {
        // SQLite may have rolled back already (e.g. after SQLITE_FULL): nothing left to undo.
      }
      throw error;
    }
  }
}

/** SQLite's primary result codes for "another connection holds the lock": worth retrying. */
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;

/**
 * A driver error as a `StoreError`: busy and locked (another connection holds the write lock past the busy timeout)
 * are retryable, as nothing was written; anything else (a full disk, a corrupt or read-only file, a constraint)
 * will fail again, so it is not.
 */
export function sqliteError(op: string, key: string, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown };
  // better-sqlite3: code "SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", …; node:sqlite: errcode, extended (low byte: primary).
  const primary =
    typeof e.errcode === "number"
      ? e.errcode & 0xff
      : typeof e.code === "string"
        ? e.code.startsWith("SQLITE_BUSY")
          ? SQLITE_BUSY
          : e.code.startsWith("SQLITE_LOCKED")
            ? SQLITE_LOCKED
            : -1
        : -1;
  const retryable = primary === SQLITE_BUSY || primary === SQLITE_LOCKED;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError(`SQLite ${op} of ${key} failed: ${message.slice(0, 500)}`, {
    cause: error,
    retryable,
  });
}
