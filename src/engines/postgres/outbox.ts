import { StoreError } from "../../core/errors.js";
import { integer, oneOf, resolveOptions, schemaFor } from "../../core/options.js";
import type { AtomicWrite } from "../../core/store.js";
import { byCommitTime } from "../../outbox/entry-order.js";
import { outboxWriteDescription } from "../../outbox/message-id.js";
import type * as Outbox from "../../outbox/types.js";
import { outboxEntryOfRow } from "../sql-outbox-row.js";
import { type PostgresAtomicWrite, postgresWrite } from "./atomic-write.js";
import { postgresStoreError } from "./errors.js";
import type { PostgresPool } from "./pool.js";
import {
  DEFAULT_SCHEMA,
  DEFAULT_STATE_TABLE,
  identifier,
  outboxTableName,
  poolField,
  qualified,
} from "./schema.js";

/** The options of `PostgresOutbox`. */
export interface PostgresOutboxOptions {
  /** The pool the reader's statements run on (a relay's). The entries' inserts run in the store's commits. */
  pool: PostgresPool;
  /** Default `public`. */
  schema?: string;
  /**
   * The store whose commits add the entries: `postgres` (`PostgresStore`, default) or `postgres-inline`
   * (`InlinePostgresStore`, which then opens a transaction for a commit that publishes).
   */
  engine?: "postgres" | "postgres-inline";
  /** The state table (for `postgres-inline`: your table); names the outbox table by default. Default `eonce_state`. */
  stateTable?: string;
  /** The outbox table (`migrate` / `migrateInline` with `outbox: true` create it). Default `<stateTable>_outbox`. */
  table?: string;
  /** Entries `pending()` returns at most (operators, tests). Default 10 000. */
  maxPending?: number;
}

const POSTGRES_OUTBOX_OPTIONS = schemaFor<PostgresOutboxOptions>()({
  pool: poolField,
  schema: identifier(DEFAULT_SCHEMA),
  engine: oneOf(["postgres", "postgres-inline"], { default: "postgres" }),
  stateTable: identifier(DEFAULT_STATE_TABLE),
  table: identifier(),
  maxPending: integer({ min: 1, default: 10_000 }),
});

/**
 * An outbox write for `InlinePostgresStore`: the same insert as `postgres`'s, under the inline engine's name. Only
 * the writes a `PostgresOutbox` made are folded (inline state folds no other SQL: its commits are one statement
 * unless they publish).
 */
export interface InlinePostgresOutboxWrite extends AtomicWrite {
  readonly engine: "postgres-inline";
  readonly sql: string;
  readonly params: readonly unknown[];
}

const INLINE_OUTBOX_WRITES = new WeakSet<AtomicWrite>();

/** Whether `write` is an outbox entry's insert made for `InlinePostgresStore`. */
export function isInlinePostgresOutboxWrite(write: AtomicWrite): write is InlinePostgresOutboxWrite {
  return INLINE_OUTBOX_WRITES.has(write);
}

/**
 * The outbox table has no such table: the commit that publishes fails for good (the store's error), the reader with
 * this error. Run `migrate` (or `migrateInline`) with `outbox: true`.
 */
export class OutboxTableMissingError extends StoreError {
  readonly table: string;
  constructor(table: string, options: { cause: unknown }) {
    super(`PostgreSQL outbox: no table ${table}; run migrate (or migrateInline) with outbox: true`, {
      ...options,
      retryable: false,
    });
    this.table = table;
  }
}

/**
 * The transactional outbox on PostgreSQL: an entry is a row of the outbox table inserted by the publishing commit's
 * own transaction (`entryWrite`), so it exists if and only if the event committed; relays (`startOutboxRelay`, in
 * as many copies as wanted) claim, send and mark entries through this reader on their own pools.
 *
 * A claim is one statement: each subject's oldest unsent entry (no unsent entry of its subject orders before it),
 * when its lease has ended, locked `FOR UPDATE SKIP LOCKED` and leased to the relay. Two relays cannot both hold a
 * head: the row lock makes their claims of it take turns, and the second re-reads the row's lease after the first
 * committed (READ COMMITTED re-checks a locked row's condition on its newest version), finding it held. Nor can a
 * relay get a subject's second entry while its head is unsent: that head is in every snapshot that holds the second
 * entry (a subject's commits follow one another), and marking it sent is the only way it stops being the head.
 */
export class PostgresOutbox implements Outbox.Outbox, Outbox.OutboxReader {
  readonly engine: "postgres" | "postgres-inline";
  readonly #pool: PostgresPool;
  readonly #table: string;
  readonly #sql: { insert: string; claim: string; markSent: string; pending: string; deleteSent: string };
  readonly #maxPending: number;

  constructor(options: PostgresOutboxOptions) {
    const o = resolveOptions("PostgresOutbox", POSTGRES_OUTBOX_OPTIONS, options);
    this.engine = o.engine;
    this.#pool = o.pool;
    this.#maxPending = o.maxPending;
    const t = qualified(o.schema, outboxTableName("PostgresOutbox", o.stateTable, o.table, "table"));
    this.#table = t;
    this.#sql = {
      // A message id is one event's message: a second commit of the event (its state row expired and deleted) finds
      // the entry there and adds nothing (`stale`), so the message is not sent twice under its id.
      insert: `INSERT INTO ${t} (message_id, subject, order_key, destination, body, group_id, attributes, created_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (message_id) DO NOTHING`,
      // $1 now, $2 limit, $3 owner, $4 lease until. The lease and sent conditions are on the locked row itself, so
      // a row another relay claimed (or marked) since this statement's snapshot is re-checked on its newest version.
      claim: `UPDATE ${t} AS o SET lease_owner = $3, lease_until_ms = $4
FROM (
  SELECT h.message_id FROM ${t} AS h
  WHERE h.sent_at_ms IS NULL AND h.lease_until_ms <= $1
    AND NOT EXISTS (
      SELECT 1 FROM ${t} AS e WHERE e.subject = h.subject AND e.sent_at_ms IS NULL AND e.order_key < h.order_key)
  ORDER BY h.created_at_ms, h.order_key
  LIMIT $2
  FOR UPDATE OF h SKIP LOCKED
) AS free
WHERE o.message_id = free.message_id AND o.sent_at_ms IS NULL AND o.lease_until_ms <= $1
RETURNING o.*`,
      // $1 id, $2 owner, $3 lease until, $4 sent at: marked while the claim is still ours, or already marked.
      markSent: `WITH marked AS (
  UPDATE ${t} SET sent_at_ms = $4
  WHERE message_id = $1 AND sent_at_ms IS NULL AND lease_owner = $2 AND lease_until_ms = $3
  RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM marked)
  OR EXISTS (SELECT 1 FROM ${t} WHERE message_id = $1 AND sent_at_ms IS NOT NULL) AS ok`,
      pending: `SELECT * FROM ${t} WHERE sent_at_ms IS NULL ORDER BY subject, order_key LIMIT $1`,
      deleteSent: `DELETE FROM ${t} WHERE sent_at_ms IS NOT NULL AND sent_at_ms < $1`,
    };
  }

  /** The outbox table, quoted and qualified. */
  get tableName(): string {
    return this.#table;
  }

  /** The insert of `entry`, run by the store in the commit's transaction. */
  entryWrite(entry: Outbox.OutboxEntry): PostgresAtomicWrite | InlinePostgresOutboxWrite {
    const params = [
      entry.messageId,
      entry.subject,
      entry.order,
      JSON.stringify(entry.destination),
      entry.body,
      entry.groupId,
      entry.attributes === undefined ? null : JSON.stringify(entry.attributes),
      entry.createdAtMs,
    ];
    const write = postgresWrite(this.#sql.insert, params, outboxWriteDescription(entry.messageId));
    if (this.engine === "postgres") return write;
    const inline: InlinePostgresOutboxWrite = { ...write, engine: "postgres-inline" };
    INLINE_OUTBOX_WRITES.add(inline);
    return inline;
  }

  async claim(req: Outbox.ClaimEntriesRequest): Promise<Outbox.ClaimedEntry[]> {
    const out = await this.#query("claim", this.#sql.claim, [
      req.nowMs,
      req.limit,
      req.owner,
      req.leaseUntilMs,
    ]);
    return out
      .map((row) => ({ ...outboxEntryOfRow(row), owner: req.owner, leaseUntilMs: req.leaseUntilMs }))
      .sort(byCommitTime);
  }

  async markSent(entry: Outbox.ClaimedEntry, sentAtMs: number): Promise<boolean> {
    const params = [entry.messageId, entry.owner, entry.leaseUntilMs, sentAtMs];
    const [row] = await this.#query("markSent", this.#sql.markSent, params);
    return row?.ok === true;
  }

  /** Unsent entries, by subject and order (at most `maxPending`). */
  async pending(): Promise<Outbox.OutboxEntry[]> {
    return (await this.#query("pending", this.#sql.pending, [this.#maxPending])).map(outboxEntryOfRow);
  }

  /**
   * Deletes the entries marked sent before `sentBeforeMs` (PostgreSQL has no TTL: run it from a schedule, with a
   * margin longer than any relay's lease). Returns how many.
   */
  async deleteSent(sentBeforeMs: number): Promise<number> {
    const out = await this.#pool
      .query(this.#sql.deleteSent, [sentBeforeMs])
      .catch((error: unknown) => Promise.reject(this.#error("deleteSent", error)));
    return out.rowCount ?? 0;
  }

  async #query(op: string, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    try {
      return (await this.#pool.query(sql, params)).rows;
    } catch (error) {
      throw this.#error(op, error);
    }
  }

  #error(op: string, error: unknown): StoreError {
    // undefined_table: the migration has not created it.
    if ((error as { code?: unknown } | null)?.code === "42P01")
      return new OutboxTableMissingError(this.#table, { cause: error });
    return postgresStoreError(`outbox ${op}`, this.#table, error);
  }
}
