import type { StateRecord, StateStatus } from "../../core/state.js";
import { type SqliteConnection, type SqlRow, Statements } from "./connection.js";

/** Table names are spliced into SQL, so they are plain identifiers only. */
export const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * The state table: one row per state key, the state machine of src/core/state.ts in columns. TEXT compares with
 * SQLite's default BINARY collation (bytes), which is position order (positions are printable ASCII).
 * `WITHOUT ROWID`: the state key is the primary key and the only way rows are found.
 */
export function stateTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS "${table}" (
  state_key      TEXT PRIMARY KEY,  -- the subject's (or unordered event's) state key
  status         TEXT NOT NULL,     -- running | done | released
  pos            TEXT NOT NULL,     -- position of the current or last claim ('' for unordered events)
  eid            TEXT NOT NULL,     -- identity of the current or last claim
  fence          INTEGER NOT NULL,  -- fence of the current or last claim; only ever increases
  tok            TEXT,              -- token of the guard call that claimed: recognises its own retried claim
  lease_until    INTEGER,           -- epoch ms the lease ends; NULL unless running
  cpos           TEXT,              -- last committed position; NULL until a commit
  ceid           TEXT,              -- last committed identity
  result         TEXT,              -- JSON of the committed result, replayed to duplicates
  result_omitted INTEGER,           -- bytes of a result too large to keep (none kept)
  cfp            TEXT,              -- payload fingerprint of the committed event (opt-in)
  expires_at     INTEGER NOT NULL,  -- epoch seconds after which deleteExpired may remove the row (DynamoDB's TTL)
  att            INTEGER            -- consecutive claims of the current identity; NULL once committed
) WITHOUT ROWID`;
}

/** A state row as a StateRecord (absent optional columns are absent fields, as the other stores return them). */
export function toRecord(row: SqlRow): StateRecord {
  const record: StateRecord = {
    key: String(row.state_key),
    status: row.status as StateStatus,
    position: String(row.pos),
    identity: String(row.eid),
    fence: Number(row.fence),
    attempts: row.att === null || row.att === undefined ? 0 : Number(row.att),
  };
  const optional = {
    token: text(row.tok),
    leaseUntilMs: num(row.lease_until),
    committedPosition: text(row.cpos),
    committedIdentity: text(row.ceid),
    result: text(row.result),
    resultOmittedBytes: num(row.result_omitted),
    committedFingerprint: text(row.cfp),
    expiresAtSeconds: num(row.expires_at),
  };
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) Object.assign(record, { [k]: v });
  return record;
}

const text = (v: unknown) => (v === null || v === undefined ? undefined : String(v));
const num = (v: unknown) => (v === null || v === undefined ? undefined : Number(v));

/** A row's stored size, roughly as SQLite counts it: the bytes of its text and the digits of its integers. */
export function rowBytes(row: SqlRow): number {
  let bytes = 0;
  for (const v of Object.values(row))
    if (v !== null && v !== undefined) bytes += Buffer.byteLength(String(v));
  return bytes;
}

/** Columns added after the first release: a table created before them gets them on open. */
const ADDED_COLUMNS = { cfp: "TEXT" } as const;

/**
 * Adds the columns a table created before them lacks. Nothing missing (every open but the first after an upgrade):
 * one read, no write lock. Otherwise several processes may be opening the database at once, each having seen the
 * column missing: under the write lock (`BEGIN IMMEDIATE`, waiting up to the busy timeout) each looks again and
 * adds only what is still missing, or a second ALTER fails with "duplicate column name".
 */
export function addMissingColumns(db: SqliteConnection, table: string): void {
  if (missingColumns(db, table).length === 0) return;
  new Statements(db).immediate(() => {
    for (const [name, type] of missingColumns(db, table))
      db.exec(`ALTER TABLE "${table}" ADD COLUMN ${name} ${type}`);
  });
}

/** Reads the table's columns afresh: the pragma's statement is checked against the schema as it runs. */
function missingColumns(db: SqliteConnection, table: string): [string, string][] {
  const present = new Set(
    (db.prepare(`PRAGMA table_info("${table}")`).all({}) as { name: string }[]).map((c) => c.name),
  );
  return Object.entries(ADDED_COLUMNS).filter(([name]) => !present.has(name));
}

/**
 * The outbox table (src/engines/sqlite/outbox.ts): one row per published message of a committed event, kept after a
 * relay marks it sent (`SqliteOutbox.deleteSent` removes old ones). The partial index serves the claim: a subject's
 * unsent entries in order, so "is there an older unsent entry" is one index probe.
 */
export function outboxTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS "${table}" (
  message_id     TEXT PRIMARY KEY,           -- eo1_…: fixed at the commit, sent with every copy of the message
  subject        TEXT NOT NULL,              -- the publishing event's subject: its entries are sent in order
  order_key      TEXT NOT NULL,              -- the commit's fence and the message's index: string order is commit order
  destination    TEXT NOT NULL,              -- JSON of the Destination
  body           TEXT NOT NULL,
  group_id       TEXT NOT NULL,              -- FIFO destinations' message group
  attributes     TEXT,                       -- JSON of the message attributes, or NULL
  created_at_ms  INTEGER NOT NULL,           -- epoch ms of the commit
  lease_owner    TEXT,                       -- the relay that claimed it last
  lease_until_ms INTEGER NOT NULL DEFAULT 0, -- epoch ms its claim ends; 0: never claimed
  sent_at_ms     INTEGER                     -- epoch ms a relay marked it sent; NULL while pending
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS "${table}_unsent" ON "${table}" (subject, order_key) WHERE sent_at_ms IS NULL`;
}
