import { StoreError, UnsupportedAtomicWriteError } from "../../core/errors.js";
import { integer, oneOf, resolveOptions, schemaFor, string } from "../../core/options.js";
import type { ClaimRequest, StateRecord } from "../../core/state.js";
import * as machine from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import { applyWrites, isSqliteAtomicWrite, type SqliteAtomicWrite } from "./atomic-write.js";
import {
  defaultDriver,
  openConnection,
  type SqliteConnection,
  type SqliteDriver,
  type SqlParams,
  Statements,
  sqliteError,
} from "./connection.js";
import { addMissingColumns, SQL_IDENTIFIER, stateTableDdl, toRecord } from "./schema.js";
import { type StateSql, stateSql } from "./statements.js";

/** The options of `SqliteStore`. */
export interface SqliteStoreOptions {
  /** The database file (created if missing), or `:memory:` (one connection, gone on close). */
  filename: string;
  /** The state table, created on open if missing. Default `eonce_state`. */
  tableName?: string;
  /** How long a step waits for another connection's write lock before failing (retryable). Default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * `full` (default): every commit is on disk before the step returns, so a power loss cannot undo a commit whose
   * event was then acknowledged (and run again on a later duplicate). `normal`: in WAL mode the database stays
   * consistent, but the last commits before a power loss (not a process crash) may be lost; faster.
   */
  synchronous?: "full" | "normal";
  /** Largest stored result (UTF-8 bytes of JSON). Default DynamoDB's (300 KB), so local runs behave as deployed. */
  maxResultBytes?: number;
  /** Default: better-sqlite3 when installed, else Node's built-in `node:sqlite` (Node ≥ 22.5). */
  driver?: SqliteDriver;
}

const SQLITE_STORE_OPTIONS = schemaFor<SqliteStoreOptions>()({
  filename: string({ required: true, doc: "SQLite database file" }),
  tableName: string({ default: "eonce_state", pattern: SQL_IDENTIFIER, expected: "a plain SQL identifier" }),
  busyTimeoutMs: integer({ min: 0, max: 600_000, default: 5000 }),
  synchronous: oneOf(["full", "normal"], { default: "full" }),
  // Beyond 64 MB a result costs more to re-read on every refused claim than replaying it saves.
  maxResultBytes: integer({ min: 1, max: 64 * 1024 * 1024, default: DYNAMODB_MAX_RESULT_BYTES }),
  driver: oneOf(["better-sqlite3", "node:sqlite"]),
});

/** Each store's statements, for the fenced sink on the same database (kept off the store's public surface). */
const STATEMENTS = new WeakMap<SqliteStore, Statements>();

/** The statements of `store`'s connection. */
export function statementsOf(store: SqliteStore): Statements {
  const s = STATEMENTS.get(store);
  if (!s) throw new StoreError("SqliteStore: not a SqliteStore", { retryable: false });
  return s;
}

/**
 * The state store on SQLite: the embedded default for single-process workers and local development. WAL mode
 * (readers never block the writer), one table created on open. Each step is one write transaction
 * (`BEGIN IMMEDIATE`) holding one conditional statement, plus the old row read in the same transaction where the
 * answer needs it; effects folded into a commit run in that transaction. The driver is synchronous, so a step is
 * atomic within the process; across processes the write lock serialises steps.
 */
export class SqliteStore implements Store.StateStore {
  readonly engine = "sqlite";
  readonly maxResultBytes: number;
  readonly #db: SqliteConnection;
  readonly #sql: Statements;
  readonly #q: StateSql;
  readonly #table: string;

  constructor(options: SqliteStoreOptions) {
    const o = resolveOptions("SqliteStore", SQLITE_STORE_OPTIONS, options);
    this.maxResultBytes = o.maxResultBytes;
    this.#table = o.tableName;
    try {
      this.#db = openConnection(o.filename, o.driver ?? defaultDriver());
      // The busy timeout first: switching to WAL and creating the table may wait for another connection.
      this.#db.exec(`PRAGMA busy_timeout = ${o.busyTimeoutMs}`);
      this.#db.exec("PRAGMA journal_mode = WAL");
      this.#db.exec(`PRAGMA synchronous = ${o.synchronous.toUpperCase()}`);
      this.#db.exec(stateTableDdl(o.tableName));
      addMissingColumns(this.#db, o.tableName);
    } catch (error) {
      throw sqliteError("open", o.filename, error);
    }
    this.#sql = new Statements(this.#db);
    this.#q = stateSql(o.tableName);
    STATEMENTS.set(this, this.#sql);
  }

  /** The state table's name (unquoted). */
  get tableName(): string {
    return this.#table;
  }

  async claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    return this.#step("claim", req.key, () =>
      this.#sql.immediate(() => {
        const previous = this.#row(req.key);
        const row = this.#sql.get(req.supersede ? this.#q.claimSupersede : this.#q.claim, claimParams(req));
        agrees(previous, req, row !== undefined);
        if (row) {
          const attempt = Number(row.att);
          return { claimed: true, fence: req.fence, attempt, leaseUntilMs: req.leaseUntilMs, previous };
        }
        const state = previous as StateRecord; // refused: the row exists
        // A retry of a claim that landed: ours, not a refusal.
        return machine.landedClaim(state, req) ?? { claimed: false, state };
      }),
    );
  }

  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const writes = this.#own(req.writes);
    const sql = req.supersede ? this.#q.claimAndCommitSupersede : this.#q.claimAndCommit;
    return this.#step("claimAndCommit", req.key, () =>
      this.#sql.immediate(() => {
        if (this.#sql.get(sql, { ...claimParams(req), ...resultParams(req) })) {
          return { claimed: true, writes: applyWrites(this.#sql, writes) };
        }
        const state = this.#row(req.key) as StateRecord;
        // A retry of a claim-and-commit that landed.
        if (machine.isOwnClaim(state, req) && state.status === "done")
          return { claimed: true, writes: unknownWrites(writes) };
        return { claimed: false, state };
      }),
    );
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const writes = this.#own(req.writes);
    const params = { key: req.key, fence: req.fence, exp: req.expiresAtSeconds, ...resultParams(req) };
    return this.#step("commit", req.key, () =>
      this.#sql.immediate(() => {
        if (this.#sql.get(this.#q.commit, params))
          return { committed: true, writes: applyWrites(this.#sql, writes) };
        const state = this.#row(req.key);
        // A retry of a commit that landed: only the holder of this fence could have committed it.
        if (machine.landedAs(state, req.fence, "done"))
          return { committed: true, writes: unknownWrites(writes) };
        return { committed: false, state };
      }),
    );
  }

  async renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    const params = { key: req.key, fence: req.fence, lease: req.leaseUntilMs, exp: req.expiresAtSeconds };
    return this.#fenced("renew", this.#q.renew, params);
  }

  async release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    const r = this.#fenced("release", this.#q.release, { key: req.key, fence: req.fence });
    // A retry of a release that landed.
    if (!r.ok && machine.landedAs(r.state, req.fence, "released")) return { ok: true };
    return r;
  }

  async read(key: string): Promise<StateRecord | undefined> {
    return this.#step("read", key, () => this.#row(key));
  }

  canFold(write: Store.AtomicWrite): boolean {
    return isSqliteAtomicWrite(write) && write.store === this;
  }

  /**
   * An effect on this database to fold into a commit: one statement ending in `RETURNING …` (a row back: applied;
   * none: refused by its own condition, reported stale), with `@name` parameters.
   */
  atomicWrite(write: { sql: string; params: SqlParams; description: string }): SqliteAtomicWrite {
    return { engine: "sqlite", store: this, ...write };
  }

  /** Deletes the rows whose expiry has passed (SQLite has no TTL): run it now and then. Returns how many. */
  deleteExpired(nowSeconds = Math.floor(Date.now() / 1000)): number {
    return this.#step("deleteExpired", "*", () => this.#sql.run(this.#q.deleteExpired, { now: nowSeconds }));
  }

  /** Removes a state row, as an expiry would (for tests and the fault simulator). */
  forget(key: string): void {
    this.#step("forget", key, () => this.#sql.run(this.#q.forget, { key }));
  }

  /** Closes the database connection. */
  close(): void {
    this.#db.close();
  }

  #row(key: string): StateRecord | undefined {
    const row = this.#sql.get(this.#q.read, { key });
    return row ? toRecord(row) : undefined;
  }

  /** A renew or release: one conditional update; on refusal, the row it was refused on. */
  #fenced(op: string, sql: string, params: SqlParams): Store.FencedResult {
    const key = String(params.key);
    return this.#step(op, key, () =>
      this.#sql.immediate(() =>
        this.#sql.get(sql, params) ? { ok: true } : { ok: false, state: this.#row(key) },
      ),
    );
  }

  #own(writes: readonly Store.AtomicWrite[] | undefined): SqliteAtomicWrite[] {
    return (writes ?? []).map((w) => {
      if (!isSqliteAtomicWrite(w))
        throw new UnsupportedAtomicWriteError(`SqliteStore cannot fold a ${w.engine} write`);
      if (w.store !== this)
        throw new UnsupportedAtomicWriteError("SqliteStore cannot fold a write built for another database");
      return w;
    });
  }

  #step<T>(op: string, key: string, body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw sqliteError(op, key, error);
    }
  }
}

function claimParams(req: ClaimRequest): SqlParams {
  return {
    key: req.key,
    pos: req.position,
    eid: req.identity,
    fence: req.fence,
    tok: req.token,
    lease: req.leaseUntilMs,
    exp: req.expiresAtSeconds,
    // A lease counts as expired only `leaseGraceMs` after its end (clock skew between workers).
    expiredBefore: req.nowMs - req.leaseGraceMs,
  };
}

function resultParams(req: {
  result?: string;
  resultOmittedBytes?: number;
  fingerprint?: string;
}): SqlParams {
  return { res: req.result ?? null, rskip: req.resultOmittedBytes ?? null, cfp: req.fingerprint ?? null };
}

/**
 * The statement's condition and the reference predicate must agree on the row read in the same transaction; a
 * disagreement is a bug in the SQL, stopped before it commits anything.
 */
function agrees(old: StateRecord | undefined, req: ClaimRequest, applied: boolean): void {
  if (machine.claimAllowed(old, req) !== applied) {
    throw new StoreError(`SqliteStore: claim condition disagrees with the state machine on ${req.key}`, {
      retryable: false,
    });
  }
}
