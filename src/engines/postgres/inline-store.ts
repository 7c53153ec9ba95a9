import { OptionsError, StoreError } from "../../core/errors.js";
import { INLINE_RESERVED_PREFIX } from "../../core/inline-prefix.js";
import { boolean, func, integer, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import { type ClaimRequest, isOwnClaim, landedAs, type StateRecord } from "../../core/state.js";
import type * as Store from "../../core/store.js";
import { unknownWrites } from "../../core/store.js";
import { DYNAMODB_MAX_RESULT_BYTES } from "../dynamodb/limits.js";
import { InlineRowStore } from "../inline-row-store.js";
import { applyWrites } from "./atomic-write.js";
import { postgresStoreError } from "./errors.js";
import { type InlineFunction, inlineFunctions, NOT_SERVED } from "./inline-functions.js";
import { functionFits } from "./inline-schema.js";
import {
  INLINE_COLUMN_NAMES,
  INLINE_STEPS,
  InlineStatements,
  type InlineStepName,
  inlineRecord,
} from "./inline-sql.js";
import { type InlinePostgresOutboxWrite, isInlinePostgresOutboxWrite } from "./outbox.js";
import type { PostgresClient, PostgresPool } from "./pool.js";
import { runStatement } from "./prepared.js";
import { DEFAULT_SCHEMA, identifier, poolField, qualified, quote } from "./schema.js";
import { claimAndCommitParams, claimParams, claimResult, commitParams, RACE_RETRIES } from "./sql.js";

/** The options of `InlinePostgresStore`. */
export interface InlinePostgresStoreOptions {
  /** A `pg.Pool`; every step is one statement on it (no transaction is opened). */
  pool: PostgresPool;
  /** Default `public`. */
  schema?: string;
  /** The user's table: one row per subject, with the state columns `migrateInline` adds. */
  table: string;
  /** The table's primary key (or unique) column. Default `pk`. Any type the row keys (strings) convert to. */
  keyColumn?: string;
  /**
   * The row a state key lives in; must be one-to-one. Default `inlineRowKey` (src/core/state-key.ts): an ordered
   * subject's row is the subject (`u#o#<rest>` for a subject `u#<rest>`), an unordered event's its state key.
   */
  rowKey?: (stateKey: string) => string;
  /** Largest stored result; default the DynamoDB store's, so a pipeline behaves alike on either. */
  maxResultBytes?: number;
  /**
   * Named (server-prepared) statements: parsed and planned once per connection. Default false: behind RDS Proxy they
   * pin the connection, and PgBouncer's transaction pooling supports them only from 1.21 (`max_prepared_statements`).
   * On a direct connection, the fastest (with `serverFunctions` then false by default; docs/benchmarks.md,
   * "PostgreSQL without prepared statements").
   */
  preparedStatements?: boolean;
  /**
   * Each step a call of its server function, which `migrateInline` creates (inline-functions.ts): one short
   * statement whose plans the server keeps per connection, so it needs no named statement and works behind any
   * pooler. Default: true, but false with `preparedStatements` (named statements cost less than named calls; with
   * both true the calls are named). A call the function cannot serve (not installed: the store calls its own
   * version's; the key column's type changed since, whatever error that makes the call fail with) runs the step's
   * statement instead, and the store keeps to statements from then on (the next `migrateInline` makes the functions
   * again for new stores). False: statements only (`migrateInline` with `serverFunctions: false` creates none).
   */
  serverFunctions?: boolean;
}

const INLINE_POSTGRES_OPTIONS = schemaFor<InlinePostgresStoreOptions>()({
  pool: poolField,
  schema: identifier(DEFAULT_SCHEMA),
  table: required(identifier()),
  keyColumn: string({
    default: "pk",
    pattern: new RegExp(`^(?!${INLINE_RESERVED_PREFIX})[A-Za-z_][A-Za-z0-9_]{0,62}$`),
    expected: `a plain SQL identifier outside the reserved prefix ${INLINE_RESERVED_PREFIX}`,
  }),
  rowKey: func<(stateKey: string) => string>(),
  maxResultBytes: integer({ min: 1, default: DYNAMODB_MAX_RESULT_BYTES }),
  preparedStatements: boolean({ default: false }),
  serverFunctions: boolean(),
});

/** The user columns of the row of one state key, written with that key's commit (`InlinePostgresStore.row`). */
export interface InlinePostgresRowWrite extends Store.AtomicWrite {
  readonly engine: "postgres-inline";
  readonly table: string;
  readonly rowKey: string;
  /** Column → value (node-postgres converts it: objects become JSON); `null` or `undefined` set NULL. */
  readonly columns: Readonly<Record<string, unknown>>;
}

/** What a row write needs from the guard's context: the state key (the row). */
export interface InlinePostgresRowSource {
  stateKey: string;
}

/** A row write's column names and values, merged over several writes (later ones win). */
interface RowColumns {
  names: string[];
  values: unknown[];
}

/** One step to run: its parameters, its row write (undefined: none) and the outbox entries it adds (none: []). */
interface StepCall {
  step: InlineStepName;
  params: unknown[];
  row?: RowColumns;
  entries?: InlinePostgresOutboxWrite[];
}

/** What a step decided; `entries`: the outbox inserts' outcomes, when it landed with some. */
type Decided = {
  landed: boolean;
  wrote: boolean;
  old: StateRecord | undefined;
  entries?: Store.WriteOutcome[];
};

/** Where a step's statement runs: the pool (one statement) or the client of a commit's transaction. */
type Target = PostgresPool | PostgresClient;

/** Statements a store keeps per set of written columns (a handful in use; a store that sees more starts over). */
const MAX_SHAPES = 256;

/**
 * Inline state on PostgreSQL: the guard's state lives in `eo_*` columns of the user's own table (`migrateInline`
 * adds them), so a handler whose only effect is its row pays **one statement per event** with `guard.apply`: claim,
 * row and commit together, no transaction. `guard.run` is two (claim, then commit with the row). Duplicates and
 * stale deliveries are one refused statement that returns the row's state. The statements are in inline-sql.ts; by
 * default each step is sent as a call of its server function (inline-functions.ts, `serverFunctions`).
 *
 * As with `InlineDynamoDBStore`, the only effect it folds is its own row write (`row(ctx, columns)`) for the row of
 * the committing state key; every row write is fenced by the position and fence of the write the row holds, so an
 * older event that took an expired claim over cannot replace a newer event's work (its commit lands, its write is
 * reported `stale`). A claim of a new key inserts a row with the key and the state only: the table's other columns
 * must be nullable or have defaults, or the rows must exist before their first event.
 *
 * It also folds a `PostgresOutbox`'s entries (`ctx.publish`, with the outbox's engine `postgres-inline`): a commit
 * that publishes is a transaction (BEGIN, the step, the entries' inserts, COMMIT), since the entries are rows of
 * another table; commits that do not publish stay one statement.
 */
export class InlinePostgresStore extends InlineRowStore<InlinePostgresRowWrite> implements Store.StateStore {
  readonly engine = "postgres-inline";
  readonly maxResultBytes: number;
  readonly #pool: PostgresPool;
  readonly #keyColumn: string;
  readonly #prepared: boolean;
  readonly #sql: InlineStatements;
  /** Each step's statement without a row write. */
  readonly #fixed: Record<InlineStepName, string>;
  /** The server functions while in use (`serverFunctions`); undefined once a call could not be served. */
  #functions: Record<InlineStepName, InlineFunction> | undefined;
  /** Statements by written columns (see #shaped). */
  readonly #shapes = new Map<string, string>();
  /** The table as the catalog names it, to ask whether a failed call's function still fits it. */
  readonly #parts: { schema: string; table: string; keyColumn: string };

  constructor(options: InlinePostgresStoreOptions) {
    const o = resolveOptions("InlinePostgresStore", INLINE_POSTGRES_OPTIONS, options);
    super({
      store: "InlinePostgresStore",
      table: qualified(o.schema, o.table),
      key: o.keyColumn,
      noun: "column",
      rowKey: o.rowKey,
    });
    this.#pool = o.pool;
    this.#keyColumn = o.keyColumn;
    this.#parts = { schema: o.schema, table: o.table, keyColumn: o.keyColumn };
    this.#prepared = o.preparedStatements;
    this.maxResultBytes = o.maxResultBytes;
    this.#sql = new InlineStatements(this.tableName, o.keyColumn);
    const steps = Object.keys(INLINE_STEPS) as InlineStepName[];
    this.#fixed = Object.fromEntries(steps.map((s) => [s, this.#sql.statement(INLINE_STEPS[s])])) as Record<
      InlineStepName,
      string
    >;
    const functions = o.serverFunctions ?? !o.preparedStatements;
    this.#functions = functions ? inlineFunctions(o.schema, o.table, this.#sql) : undefined;
  }

  get keyColumn(): string {
    return this.#keyColumn;
  }

  /**
   * The user columns of the event's row, written with its commit (`ctx.atCommit(store.row(ctx, {...}))`). `null` or
   * `undefined` set NULL. The key column and `eo_*` names are refused; names must be plain SQL identifiers.
   */
  row(ctx: InlinePostgresRowSource, columns: Record<string, unknown>): InlinePostgresRowWrite {
    this.checkRow(ctx, columns, quote); // quote: a plain identifier, or OptionsError
    return this.made(ctx.stateKey, { table: this.tableName, columns: { ...columns } });
  }

  /**
   * The row write now, in its own statement, while `ctx` holds the claim (`guard.run` progress): applied only if the
   * claim's fence still holds and the row holds no newer write, else `stale`. Not atomic with the commit.
   */
  async putRow(
    ctx: InlinePostgresRowSource & { fence: number },
    columns: Record<string, unknown>,
  ): Promise<"applied" | "stale"> {
    const write = this.row(ctx, columns);
    const row = rowColumns([write]);
    if (row.names.length === 0) throw new OptionsError("InlinePostgresStore.putRow: no columns to write");
    const out = await this.#run("putRow", ctx.stateKey, {
      step: "put",
      params: [write.rowKey, ctx.fence],
      row,
    });
    return out.landed && out.wrote ? "applied" : "stale";
  }

  async claim(req: ClaimRequest): Promise<Store.ClaimResult> {
    const params = claimParams(req, this.rowKeyOf(req.key));
    return claimResult(await this.#decide("claim", req.key, { step: "claim", params }), req);
  }

  override canFold(write: Store.AtomicWrite): boolean {
    return super.canFold(write) || isInlinePostgresOutboxWrite(write);
  }

  async claimAndCommit(req: Store.ClaimAndCommitRequest): Promise<Store.ClaimAndCommitResult> {
    const { writes, call } = this.#folding("apply", req, (rowKey) => claimAndCommitParams(req, rowKey));
    const out = await this.#decide("claimAndCommit", req.key, call);
    if (out.landed) return { claimed: true, writes: outcomes(writes, out) };
    const state = out.old as StateRecord;
    // A retry of a claim-and-commit that landed.
    if (isOwnClaim(state, req) && state.status === "done")
      return { claimed: true, writes: unknownWrites(writes) };
    return { claimed: false, state };
  }

  async commit(req: Store.CommitRequest): Promise<Store.CommitResult> {
    const { writes, call } = this.#folding("commit", req, (rowKey) => commitParams(req, rowKey));
    const out = await this.#run("commit", req.key, call);
    if (out.landed) return { committed: true, writes: outcomes(writes, out) };
    // A retry of a commit that landed: only the holder of this fence could have committed it.
    if (landedAs(out.old, req.fence, "done")) return { committed: true, writes: unknownWrites(writes) };
    return { committed: false, state: out.old };
  }

  async renew(req: Store.RenewRequest): Promise<Store.FencedResult> {
    const params = [this.rowKeyOf(req.key), req.fence, req.leaseUntilMs, req.expiresAtSeconds];
    const out = await this.#run("renew", req.key, { step: "renew", params });
    return out.landed ? { ok: true } : { ok: false, state: out.old };
  }

  async release(req: Store.FencedRequest): Promise<Store.FencedResult> {
    const params = [this.rowKeyOf(req.key), req.fence];
    const out = await this.#run("release", req.key, { step: "release", params });
    // A retry of a release that landed.
    if (out.landed || landedAs(out.old, req.fence, "released")) return { ok: true };
    return { ok: false, state: out.old };
  }

  async read(key: string): Promise<StateRecord | undefined> {
    const row = this.rowKeyOf(key);
    try {
      const out = await this.#pool.query(this.#sql.read(), [row]);
      // A row without state (written by something else) holds no claim.
      return inlineRecord(key, out.rows[0]);
    } catch (error) {
      throw postgresStoreError("read", key, error);
    }
  }

  /**
   * A step that folds the request's writes (`apply`, `commit`): the writes (row writes checked, outbox entries
   * apart) and the step to run.
   */
  #folding(
    step: "apply" | "commit",
    req: { key: string; writes?: readonly Store.AtomicWrite[] },
    stepParams: (rowKey: string) => unknown[],
  ): { writes: readonly Store.AtomicWrite[]; call: StepCall } {
    const rowKey = this.rowKeyOf(req.key);
    const all = req.writes ?? [];
    const entries = all.filter(isInlinePostgresOutboxWrite);
    const rows = this.rowWrites(
      rowKey,
      all.filter((w) => !isInlinePostgresOutboxWrite(w)),
    );
    const row = rows.length > 0 ? rowColumns(rows) : undefined;
    const call: StepCall = { step, params: stepParams(rowKey), ...(row ? { row } : {}), entries };
    return { writes: all, call };
  }

  /** A statement built once per `key` (a step and the columns it writes, or the shape of a function call). */
  #shaped(key: string, build: () => string): string {
    let sql = this.#shapes.get(key);
    if (sql === undefined) {
      sql = build();
      if (this.#shapes.size >= MAX_SHAPES) this.#shapes.clear();
      this.#shapes.set(key, sql);
    }
    return sql;
  }

  /**
   * A claiming statement: a row that appeared after the statement's snapshot decides nothing (no row, nothing
   * landed), so it runs again.
   */
  async #decide(op: string, key: string, call: StepCall): Promise<Decided> {
    for (let i = 0; i < RACE_RETRIES; i++) {
      const out = await this.#run(op, key, call);
      if (out.landed || out.old) return out;
    }
    throw new StoreError(
      `PostgreSQL inline ${op} of ${key}: the row kept changing under the statement; retry`,
    );
  }

  /** A step: alone, or in a transaction with the outbox entries it adds. */
  async #run(op: string, key: string, call: StepCall): Promise<Decided> {
    return call.entries?.length ? this.#transact(op, key, call) : this.#step(op, key, call, this.#pool);
  }

  /** The step on `db`: its server function's call while they serve, else its statement. */
  async #step(op: string, key: string, call: StepCall, db: Target): Promise<Decided> {
    const row =
      (await this.#viaFunction(op, key, call, db)) ?? (await this.#send(op, key, this.#statement(call), db));
    return { landed: Number(row.landed) > 0, wrote: row.wrote !== false, old: inlineRecord(key, row) };
  }

  /**
   * BEGIN, the step, the outbox entries' inserts if it landed, COMMIT (a refused step: ROLLBACK, no entry). A
   * function call that could not serve aborts the transaction after the store has turned to statements: the
   * transaction runs once more, with the statement.
   */
  async #transact(op: string, key: string, call: StepCall): Promise<Decided> {
    for (let attempt = 0; ; attempt++) {
      const calling = this.#functions !== undefined;
      let client: PostgresClient | undefined;
      try {
        client = await this.#pool.connect();
        await client.query("BEGIN");
        const out = await this.#step(op, key, call, client);
        if (!out.landed) {
          await client.query("ROLLBACK");
          return out;
        }
        const entries = await applyWrites(client, call.entries ?? []);
        await client.query("COMMIT");
        return { ...out, entries };
      } catch (error) {
        // The connection is dropped rather than reused: it may hold an open (failed) transaction.
        client?.release(error instanceof Error ? error : true);
        client = undefined;
        if (attempt === 0 && calling && this.#functions === undefined) continue;
        throw postgresStoreError(op, key, error);
      } finally {
        client?.release();
      }
    }
  }

  /**
   * The step's function call; undefined when it is not for this call (a binary value: node-postgres sends Buffers
   * as bytes, which a text parameter would read otherwise than the column) or cannot serve it (not installed, the key
   * column retyped): then no function is called from this store again.
   */
  async #viaFunction(
    op: string,
    key: string,
    call: StepCall,
    db: Target,
  ): Promise<Record<string, unknown> | undefined> {
    const fn = this.#functions?.[call.step];
    if (!fn || call.row?.values.some((v) => ArrayBuffer.isView(v))) return undefined;
    const names = call.row?.names;
    const sql = this.#shaped(`call ${call.step}\n${names?.join("\n") ?? "-"}`, () => fn.call(names));
    const params = call.row ? [...call.params, ...call.row.values] : call.params;
    try {
      const answer = (await this.#send(op, key, { sql, params }, db)).r as Record<string, unknown>;
      if (answer.landed !== NOT_SERVED) return answer;
    } catch (error) {
      if (!(await this.#unfit(error, fn))) throw error;
    }
    this.#functions = undefined;
    return undefined;
  }

  /**
   * Whether a call failed because its function does not fit the table (any more): the server refused the call for
   * good and the catalog holds no function of that name made for the key column's type. A retype fails the call
   * with an operator (`42883 operator does not exist: uuid = text`), a value of the new type (`42804`) or the row key
   * as a value of the old type (`22P02`); asking the catalog, not reading the code, keeps every other refusal (a
   * constraint, a trigger of the user's) the caller's, as the statement would raise it.
   */
  async #unfit(error: unknown, fn: InlineFunction): Promise<boolean> {
    if (!(error instanceof StoreError) || error.retryable) return false;
    try {
      return !(await functionFits(this.#pool, this.#parts, fn));
    } catch {
      return false;
    }
  }

  /** The step's own statement and its parameters (the step's, then the written columns' values). */
  #statement(call: StepCall): { sql: string; params: unknown[] } {
    const { step, row } = call;
    if (!row) return { sql: this.#fixed[step], params: call.params };
    const sql = this.#shaped(`${step}\n${row.names.join("\n")}`, () =>
      this.#sql.statement(INLINE_STEPS[step], row.names),
    );
    return { sql, params: [...call.params, ...row.values] };
  }

  /** Runs one statement. */
  async #send(
    op: string,
    key: string,
    s: { sql: string; params: unknown[] },
    db: Target,
  ): Promise<Record<string, unknown>> {
    let row: Record<string, unknown> | undefined;
    try {
      row = (await runStatement(db, s.sql, s.params, this.#prepared)).rows[0];
    } catch (error) {
      throw postgresStoreError(op, key, error);
    }
    if (!row) throw new Error("unreachable: the decided row is always returned");
    return row;
  }
}

/** The writes' columns, merged (later writes win), in a stable order so that a shape's statement is reused. */
function rowColumns(writes: readonly InlinePostgresRowWrite[]): RowColumns {
  const merged = new Map<string, unknown>();
  for (const w of writes)
    for (const [name, value] of Object.entries(w.columns)) merged.set(name, value ?? null);
  const names = [...merged.keys()];
  return { names, values: names.map((n) => merged.get(n)) };
}

/** The outcomes of a landed step's writes, in their order: row writes by `wrote`, outbox entries by their inserts. */
function outcomes(writes: readonly Store.AtomicWrite[], out: Decided): Store.WriteOutcome[] {
  const status = out.wrote ? "applied" : "stale";
  const entries = [...(out.entries ?? [])];
  return writes.map((w) =>
    isInlinePostgresOutboxWrite(w)
      ? (entries.shift() ?? { description: w.description, status: "unknown" })
      : { description: w.description, status },
  );
}

/** The state columns in the user's table, for documentation and checks. */
export const INLINE_POSTGRES_COLUMNS: readonly string[] = INLINE_COLUMN_NAMES;
