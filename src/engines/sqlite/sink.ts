import { OptionsError } from "../../core/errors.js";
import { requireKeyText } from "../../core/key-text.js";
import { custom, required, resolveOptions, schemaFor, string } from "../../core/options.js";
import { assertPosition, type Position } from "../../core/position.js";
import { UNORDERED_POSITION } from "../../core/state.js";
import type { SqliteAtomicWrite } from "./atomic-write.js";
import { sqliteError } from "./connection.js";
import { SQL_IDENTIFIER } from "./schema.js";
import { SqliteStore, statementsOf } from "./store.js";

/** What a fenced write needs from the guard's context: the event's position and the claim's fence. */
export interface SqliteFenceSource {
  position: Position | undefined;
  fence: number;
}

/** The options of `SqliteFencedSink`. */
export interface SqliteFencedSinkOptions {
  /** The store whose database holds the sink table (so its writes can fold into the store's commits). */
  store: SqliteStore;
  /** Created on first use if missing. Default `eonce_sink`. */
  tableName?: string;
}

/** A row the SQLite sink writes: a key and a JSON value. */
export interface SqliteSinkRow {
  key: string;
  /** Stored as JSON. */
  value: unknown;
}

const SINK_OPTIONS = schemaFor<SqliteFencedSinkOptions>()({
  store: required(custom<SqliteStore>("a SqliteStore", (v) => v instanceof SqliteStore)),
  tableName: string({ default: "eonce_sink", pattern: SQL_IDENTIFIER, expected: "a plain SQL identifier" }),
});

/**
 * Rows that land in position order whatever the arrival order: each write is one upsert that replaces the row only
 * if it holds an older position, or the same position from an older claim (fence), so a late or zombie run never
 * overwrites newer work. One row is written by one subject only (positions compare within a subject). Events
 * without a position write the empty position, which every positioned write overwrites; between two of them the later
 * claim wins (the fenced sinks' one rule, docs/architecture.md).
 */
export class SqliteFencedSink {
  readonly #store: SqliteStore;
  readonly #table: string;
  #created = false;

  constructor(options: SqliteFencedSinkOptions) {
    const o = resolveOptions("SqliteFencedSink", SINK_OPTIONS, options);
    this.#store = o.store;
    this.#table = o.tableName;
  }

  /** The fenced upsert of `row` by the claim in `ctx`, to fold into the guard's commit (`ctx.atCommit`). */
  atomicPut(ctx: SqliteFenceSource, row: SqliteSinkRow): SqliteAtomicWrite {
    this.#ensureTable();
    const position = fencedPosition(ctx);
    if (typeof row.key !== "string" || row.key.length === 0)
      throw new OptionsError("SqliteFencedSink: a row needs a non-empty string key");
    requireKeyText("sink key", row.key);
    return this.#store.atomicWrite({
      description: `put ${this.#table}/${row.key}`,
      sql: `INSERT INTO "${this.#table}" AS target (pk, value, src_pos, src_fence) VALUES (@pk, @value, @pos, @fence)
ON CONFLICT (pk) DO UPDATE SET value = excluded.value, src_pos = excluded.src_pos, src_fence = excluded.src_fence
WHERE target.src_pos < excluded.src_pos OR (target.src_pos = excluded.src_pos AND target.src_fence < excluded.src_fence)
RETURNING 1 AS applied`,
      params: { pk: row.key, value: JSON.stringify(row.value) ?? null, pos: position, fence: ctx.fence },
    });
  }

  /** The same fenced upsert now, on its own. `stale` when the row already holds newer work. */
  async put(ctx: SqliteFenceSource, row: SqliteSinkRow): Promise<"applied" | "stale"> {
    const w = this.atomicPut(ctx, row);
    try {
      return statementsOf(this.#store).get(w.sql, w.params) ? "applied" : "stale";
    } catch (error) {
      throw sqliteError("fenced put", row.key, error);
    }
  }

  /** The row, with the position and fence of the write that landed last. */
  async get(key: string): Promise<{ value: unknown; srcPos: Position; srcFence: number } | undefined> {
    this.#ensureTable();
    try {
      const row = statementsOf(this.#store).get(`SELECT * FROM "${this.#table}" WHERE pk = @pk`, { pk: key });
      if (!row) return undefined;
      const value = row.value === null ? undefined : JSON.parse(String(row.value));
      return { value, srcPos: String(row.src_pos), srcFence: Number(row.src_fence) };
    } catch (error) {
      throw sqliteError("sink read", key, error);
    }
  }

  #ensureTable(): void {
    if (this.#created) return;
    try {
      statementsOf(this.#store).run(
        `CREATE TABLE IF NOT EXISTS "${this.#table}" (
  pk        TEXT PRIMARY KEY,  -- the row's key
  value     TEXT,              -- JSON of the value written
  src_pos   TEXT NOT NULL,     -- position of the event whose write landed last
  src_fence INTEGER NOT NULL   -- fence of the claim that wrote it (tie-break between runs of one event)
) WITHOUT ROWID`,
        {},
      );
    } catch (error) {
      throw sqliteError("create sink table", this.#table, error);
    }
    this.#created = true;
  }
}

function fencedPosition(ctx: SqliteFenceSource): Position {
  if (!Number.isSafeInteger(ctx.fence) || ctx.fence <= 0)
    throw new OptionsError(`SqliteFencedSink: a write needs the claim's fence, got ${String(ctx.fence)}`);
  if (ctx.position === undefined || ctx.position === UNORDERED_POSITION) return UNORDERED_POSITION;
  assertPosition(ctx.position);
  return ctx.position;
}
