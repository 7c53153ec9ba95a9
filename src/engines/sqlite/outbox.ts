import { OptionsError } from "../../core/errors.js";
import { custom, integer, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import { byCommitTime } from "../../outbox/entry-order.js";
import { outboxWriteDescription } from "../../outbox/message-id.js";
import type * as Outbox from "../../outbox/types.js";
import { outboxEntryOfRow } from "../sql-outbox-row.js";
import type { SqliteAtomicWrite } from "./atomic-write.js";
import { sqliteError } from "./connection.js";
import { outboxTableDdl, SQL_IDENTIFIER } from "./schema.js";
import { SqliteStore, statementsOf } from "./store.js";

/** The options of `SqliteOutbox`. */
export interface SqliteOutboxOptions {
  /**
   * The store whose commits add the entries (its database holds the outbox table). A relay in another process opens
   * its own `SqliteStore` on the same file and gives it here.
   */
  store: SqliteStore;
  /** The outbox table, created if missing. Default `<the store's table>_outbox`. */
  tableName?: string;
  /** Entries `pending()` returns at most (operators, tests). Default 10 000. */
  maxPending?: number;
}

const SQLITE_OUTBOX_OPTIONS = schemaFor<SqliteOutboxOptions>()({
  store: required(custom<SqliteStore>("a SqliteStore", (v) => v instanceof SqliteStore)),
  tableName: string({ pattern: SQL_IDENTIFIER, expected: "a plain SQL identifier" }),
  maxPending: integer({ min: 1, default: 10_000 }),
});

/**
 * The transactional outbox on SQLite: an entry is a row of the outbox table inserted in the publishing commit's own
 * transaction (`entryWrite`, a `SqliteAtomicWrite` of the store), so it exists if and only if the event committed.
 * Relays (`startOutboxRelay`) claim entries through this reader: a claim is one write transaction (`BEGIN
 * IMMEDIATE`: the database's write lock), so claims of relays in several processes take turns, and each finds the
 * leases the one before it took. It leases each subject's oldest unsent entry (none of its subject orders before it)
 * whose lease has ended.
 */
export class SqliteOutbox implements Outbox.Outbox, Outbox.OutboxReader {
  readonly engine = "sqlite";
  readonly #store: SqliteStore;
  readonly #table: string;
  readonly #maxPending: number;
  readonly #sql: {
    insert: string;
    claim: string;
    mark: string;
    sent: string;
    pending: string;
    deleteSent: string;
  };

  constructor(options: SqliteOutboxOptions) {
    const o = resolveOptions("SqliteOutbox", SQLITE_OUTBOX_OPTIONS, options);
    this.#store = o.store;
    this.#maxPending = o.maxPending;
    const t = o.tableName ?? `${o.store.tableName}_outbox`;
    if (!SQL_IDENTIFIER.test(t))
      throw new OptionsError(`SqliteOutbox: the outbox table's default name ${t} is too long; set tableName`);
    this.#table = t;
    try {
      statementsOf(o.store).connection.exec(outboxTableDdl(t));
    } catch (error) {
      throw sqliteError("create outbox table", t, error);
    }
    this.#sql = {
      // A message id is one event's message: a second commit of the event (its state row expired and deleted) finds
      // the entry there and adds nothing (`stale`), so the message is not sent twice under its id.
      insert: `INSERT INTO "${t}" (message_id, subject, order_key, destination, body, group_id, attributes, created_at_ms)
VALUES (@id, @subject, @order, @destination, @body, @group, @attributes, @created)
ON CONFLICT (message_id) DO NOTHING RETURNING 1 AS applied`,
      claim: `UPDATE "${t}" SET lease_owner = @owner, lease_until_ms = @until
WHERE message_id IN (
  SELECT h.message_id FROM "${t}" AS h
  WHERE h.sent_at_ms IS NULL AND h.lease_until_ms <= @now
    AND NOT EXISTS (
      SELECT 1 FROM "${t}" AS e WHERE e.subject = h.subject AND e.sent_at_ms IS NULL AND e.order_key < h.order_key)
  ORDER BY h.created_at_ms, h.order_key
  LIMIT @limit
)
RETURNING *`,
      mark: `UPDATE "${t}" SET sent_at_ms = @sent
WHERE message_id = @id AND sent_at_ms IS NULL AND lease_owner = @owner AND lease_until_ms = @until`,
      sent: `SELECT 1 AS sent FROM "${t}" WHERE message_id = @id AND sent_at_ms IS NOT NULL`,
      pending: `SELECT * FROM "${t}" WHERE sent_at_ms IS NULL ORDER BY subject, order_key LIMIT @limit`,
      deleteSent: `DELETE FROM "${t}" WHERE sent_at_ms IS NOT NULL AND sent_at_ms < @before`,
    };
  }

  /** The outbox table's name (unquoted). */
  get tableName(): string {
    return this.#table;
  }

  /** The insert of `entry`, run by the store in the commit's transaction. */
  entryWrite(entry: Outbox.OutboxEntry): SqliteAtomicWrite {
    return this.#store.atomicWrite({
      description: outboxWriteDescription(entry.messageId),
      sql: this.#sql.insert,
      params: {
        id: entry.messageId,
        subject: entry.subject,
        order: entry.order,
        destination: JSON.stringify(entry.destination),
        body: entry.body,
        group: entry.groupId,
        attributes: entry.attributes === undefined ? null : JSON.stringify(entry.attributes),
        created: entry.createdAtMs,
      },
    });
  }

  async claim(req: Outbox.ClaimEntriesRequest): Promise<Outbox.ClaimedEntry[]> {
    const params = { owner: req.owner, until: req.leaseUntilMs, now: req.nowMs, limit: req.limit };
    const rows = this.#step("claim", () => {
      const sql = statementsOf(this.#store);
      return sql.immediate(() => sql.all(this.#sql.claim, params));
    });
    return rows
      .map((row) => ({ ...outboxEntryOfRow(row), owner: req.owner, leaseUntilMs: req.leaseUntilMs }))
      .sort(byCommitTime);
  }

  async markSent(entry: Outbox.ClaimedEntry, sentAtMs: number): Promise<boolean> {
    const params = { id: entry.messageId, owner: entry.owner, until: entry.leaseUntilMs, sent: sentAtMs };
    return this.#step("markSent", () => {
      const sql = statementsOf(this.#store);
      return sql.immediate(
        () => sql.run(this.#sql.mark, params) > 0 || sql.get(this.#sql.sent, params) !== undefined,
      );
    });
  }

  /** Unsent entries, by subject and order (at most `maxPending`). */
  async pending(): Promise<Outbox.OutboxEntry[]> {
    return this.#step("pending", () =>
      statementsOf(this.#store).all(this.#sql.pending, { limit: this.#maxPending }).map(outboxEntryOfRow),
    );
  }

  /** Deletes the entries marked sent before `sentBeforeMs` (run it now and then). Returns how many. */
  deleteSent(sentBeforeMs: number): number {
    return this.#step("deleteSent", () =>
      statementsOf(this.#store).run(this.#sql.deleteSent, { before: sentBeforeMs }),
    );
  }

  #step<T>(op: string, body: () => T): T {
    try {
      return body();
    } catch (error) {
      throw sqliteError(`outbox ${op}`, this.#table, error);
    }
  }
}
