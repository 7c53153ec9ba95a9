import { StoreError, UnsupportedAtomicWriteError } from "../../core/errors.js";
import { boolean, integer, resolveOptions, schemaFor } from "../../core/options.js";
import { type ClaimRequest, isOwnClaim, landedAs, type StateRecord } from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import { applyWrites, isPostgresAtomicWrite, type PostgresAtomicWrite } from "./atomic-write.js";
import { postgresStoreError } from "./errors.js";
import type { PostgresClient, PostgresPool } from "./pool.js";
import { runStatement } from "./prepared.js";
import { DEFAULT_SCHEMA, DEFAULT_STATE_TABLE, identifier, poolField, qualified } from "./schema.js";
import {
  COMMIT_SET,
  claimAndCommitParams,
  claimAndCommitSql,
  claimParams,
  claimResult,
  claimSql,
  commitParams,
  type Decided,
  decided,
  fencedSql,
  RACE_RETRIES,
  RELEASE_SET,
  RENEW_SET,
  toRecord,
} from "./sql.js";

/** The options of `PostgresStore`. */
export interface PostgresStoreOptions {
  /** A `pg.Pool`: single statements run on it; a commit with effects takes one of its clients for its transaction. */
  pool: PostgresPool;
  /** Default `public`. */
  schema?: string;
  /** The state table (`migrate` creates it). Default `eonce_state`. */
  table?: string;
  /** Largest stored result; default the DynamoDB store's, so a pipeline behaves alike on either. */
  maxResultBytes?: number;
  /**
   * Named (server-prepared) statements for the store's own statements: parsed and planned once per connection
   * (bench/postgres-inline.ts). Default false: behind RDS Proxy they pin the connection, and PgBouncer's transaction
   * pooling supports them only from 1.21 (`max_prepared_statements`). Turn on for a direct connection.
   */
  preparedStatements?: boolean;
}

const POSTGRES_STORE_OPTIONS = schemaFor<PostgresStoreOptions>()({
  pool: poolField,
  schema: identifier(DEFAULT_SCHEMA),
  table: identifier(DEFAULT_STATE_TABLE),
  maxResultBytes: integer({ min: 1, default: DYNAMODB_MAX_RESULT_BYTES }),
  preparedStatements: boolean({ default: false }),
});

type Statement = { sql: string; params: unknown[] };

/**
 * The state store on PostgreSQL (node-postgres). Each step is one statement that decides on the locked row and
 * returns it (sql.ts), so a refusal costs no extra round trip; the attempt counter counts on within the claim's
 * own statement. A commit (or apply) with effects is one transaction on one pooled client: BEGIN, the state update,
 * the effects (`PostgresAtomicWrite`s: SQL on the same database), COMMIT.
 */
export class PostgresStore implements Store.StateStore {
  readonly engine = "postgres";
  readonly maxResultBytes: number;
  readonly #pool: PostgresPool;
  readonly #table: string;
  readonly #prepared: boolean;
  readonly #sql: { claim: string; apply: string; commit: string; renew: string; release: string };

  constructor(options: PostgresStoreOptions) {
    const o = resolveOptions("PostgresStore", POSTGRES_STORE_OPTIONS, options);
    this.#pool = o.pool;
    this.#table = qualified(o.schema, o.table);
    this.maxResultBytes = o.maxResultBytes;
    this.#prepared = o.preparedStatements;
    this.#sql = {
      claim: claimSql(this.#table),
      apply: claimAndCommitSql(this.#table),
      commit: fencedSql(this.#table, COMMIT_SET),
      renew: fencedSql(this.#table, RENEW_SET),
      release: fencedSql(this.#table, RELEASE_SET),
    };
  }

  /** The qualified state table, e.g. `"public"."eonce_state"`. */
  get tableName(): string {
    return this.#table;
  }

  async claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    return claimResult(
      await this.#decide("claim", req.key, { sql: this.#sql.claim, params: claimParams(req, req.key) }),
      req,
    );
  }

  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const writes = postgresWrites(req.writes);
    const params = claimAndCommitParams(req, req.key);
    const out = await this.#decide("claimAndCommit", req.key, { sql: this.#sql.apply, params }, writes);
    if (out.landed) return { claimed: true, writes: out.writes };
    const state = out.old as StateRecord;
    // A retry of a claim-and-commit that landed.
    if (isOwnClaim(state, req) && state.status === "done")
      return { claimed: true, writes: unknownWrites(writes) };
    return { claimed: false, state };
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const writes = postgresWrites(req.writes);
    const params = commitParams(req, req.key);
    const out = await this.#decide("commit", req.key, { sql: this.#sql.commit, params }, writes);
    if (out.landed) return { committed: true, writes: out.writes };
    // A retry of a commit that landed: only the holder of this fence could have committed it.
    if (landedAs(out.old, req.fence, "done")) return { committed: true, writes: unknownWrites(writes) };
    return { committed: false, state: out.old };
  }

  async renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    const params = [req.key, req.fence, req.leaseUntilMs, req.expiresAtSeconds];
    const out = await this.#decide("renew", req.key, { sql: this.#sql.renew, params });
    return out.landed ? { ok: true } : { ok: false, state: out.old };
  }

  async release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    const out = await this.#decide("release", req.key, {
      sql: this.#sql.release,
      params: [req.key, req.fence],
    });
    // A retry of a release that landed.
    if (out.landed || landedAs(out.old, req.fence, "released")) return { ok: true };
    return { ok: false, state: out.old };
  }

  async read(key: string): Promise<StateRecord | undefined> {
    try {
      const out = await this.#pool.query(`SELECT * FROM ${this.#table} WHERE state_key = $1`, [key]);
      return out.rows[0] ? toRecord(out.rows[0]) : undefined;
    } catch (error) {
      throw postgresStoreError("read", key, error);
    }
  }

  canFold(write: Store.AtomicWrite): boolean {
    return isPostgresAtomicWrite(write);
  }

  /**
   * Runs a deciding statement (with `writes`, in one transaction with them) and returns its decision. A claim whose
   * row appeared after the statement's snapshot decides nothing (no row, nothing landed): it runs again.
   */
  async #decide(
    op: string,
    key: string,
    statement: Statement,
    writes: PostgresAtomicWrite[] = [],
  ): Promise<Decided & { writes: Store.WriteOutcome[] }> {
    for (let i = 0; i < RACE_RETRIES; i++) {
      const out =
        writes.length === 0
          ? await this.#single(op, key, statement)
          : await this.#transact(op, key, statement, writes);
      if (out.landed || out.old || !op.startsWith("claim")) return { writes: [], ...out };
    }
    throw new StoreError(`PostgreSQL ${op} of ${key}: the row kept changing under the statement; retry`);
  }

  async #single(op: string, key: string, s: Statement): Promise<Decided> {
    try {
      return decided((await runStatement(this.#pool, s.sql, s.params, this.#prepared)).rows[0]);
    } catch (error) {
      throw postgresStoreError(op, key, error);
    }
  }

  /**
   * BEGIN, the state update, then each write, COMMIT. A refused state update rolls everything back. A write that
   * changes no row (its fencing refused it) is stale; the others are applied.
   */
  async #transact(
    op: string,
    key: string,
    s: Statement,
    writes: PostgresAtomicWrite[],
  ): Promise<Decided & { writes: Store.WriteOutcome[] }> {
    let client: PostgresClient | undefined;
    try {
      client = await this.#pool.connect();
      await client.query("BEGIN");
      const decision = decided((await runStatement(client, s.sql, s.params, this.#prepared)).rows[0]);
      if (!decision.landed) {
        await client.query("ROLLBACK");
        return { ...decision, writes: [] };
      }
      const outcomes = await applyWrites(client, writes);
      await client.query("COMMIT");
      return { ...decision, writes: outcomes };
    } catch (error) {
      // The connection is dropped rather than reused: it may hold an open (failed) transaction.
      client?.release(error instanceof Error ? error : true);
      client = undefined;
      throw postgresStoreError(op, key, error);
    } finally {
      client?.release();
    }
  }
}

function postgresWrites(writes: readonly Store.AtomicWrite[] | undefined): PostgresAtomicWrite[] {
  return (writes ?? []).map((w) => {
    if (!isPostgresAtomicWrite(w))
      throw new UnsupportedAtomicWriteError(`PostgresStore cannot fold a ${w.engine} write`);
    return w;
  });
}
