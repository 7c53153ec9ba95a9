import { OptionsError } from "../../core/errors.js";
import { type FenceSource, fencedPosition } from "../../core/fence.js";
import { requireKeyText } from "../../core/key-text.js";
import { type Resolved, required, resolveOptions, schemaFor } from "../../core/options.js";
import type { PostgresAtomicWrite } from "./atomic-write.js";
import { postgresStoreError } from "./errors.js";
import type { PostgresPool } from "./pool.js";
import { DEFAULT_SCHEMA, identifier, poolField, qualified, quote } from "./schema.js";

/** What a fenced write needs from the guard's context: the event's position and the claim's fence. */
export type PostgresFenceSource = FenceSource;

/** The options of `PostgresFencedSink`. */
export interface PostgresFencedSinkOptions {
  pool: PostgresPool;
  /** The sink table: yours, with a primary key (or unique) column `keyColumn` and the two fencing columns. */
  table: string;
  /** Default `public`. */
  schema?: string;
  /** Default `pk`. */
  keyColumn?: string;
  /** Where the writing event's position is kept (text; compared byte-wise). Default `src_pos`. */
  positionColumn?: string;
  /** Where the writing claim's fence is kept (bigint; tie-break between two runs of one event). Default `src_fence`. */
  fenceColumn?: string;
}

const SINK_OPTIONS = schemaFor<PostgresFencedSinkOptions>()({
  pool: poolField,
  table: required(identifier()),
  schema: identifier(DEFAULT_SCHEMA),
  keyColumn: identifier("pk"),
  positionColumn: identifier("src_pos"),
  fenceColumn: identifier("src_fence"),
});

/**
 * Upserts rows so that results land in position order whatever the arrival order: `INSERT … ON CONFLICT DO UPDATE
 * … WHERE` the row holds an older position, or the same position from an older claim (a row without a position,
 * written by something else, counts as older than any). A late or zombie run changes no row and is told `stale`.
 * Events without a position write the empty position: any positioned write wins over them, and between two of them
 * the later claim wins (the fenced sinks' one rule, docs/architecture.md). One row must be written by one subject
 * only: positions are only comparable within a subject.
 */
export class PostgresFencedSink {
  /** The options, checked, with their defaults. */
  readonly #o: Resolved<typeof SINK_OPTIONS>;
  /** The table, qualified by its schema. */
  readonly #table: string;

  constructor(options: PostgresFencedSinkOptions) {
    this.#o = resolveOptions("PostgresFencedSink", SINK_OPTIONS, options);
    this.#table = qualified(this.#o.schema, this.#o.table);
  }

  /** The fenced upsert of `row` (column → value) written by the claim in `ctx`. */
  upsert(ctx: PostgresFenceSource, row: Record<string, unknown>): { sql: string; params: unknown[] } {
    const { keyColumn, positionColumn, fenceColumn } = this.#o;
    const key = row[keyColumn];
    if (key === undefined || key === null || key === "") {
      throw new OptionsError(`PostgresFencedSink: the row needs a "${keyColumn}"`);
    }
    if (typeof key === "string") requireKeyText("sink key", key);
    const values: Record<string, unknown> = {
      ...row,
      [positionColumn]: fencedPosition("PostgresFencedSink", ctx),
      [fenceColumn]: ctx.fence,
    };
    const columns = Object.keys(values).map(quote);
    const params = Object.values(values);
    const [k, p, f] = [quote(keyColumn), quote(positionColumn), quote(fenceColumn)];
    const updates = columns.filter((c) => c !== k).map((c) => `${c} = EXCLUDED.${c}`);
    const sql =
      `INSERT INTO ${this.#table} AS target (${columns.join(", ")}) VALUES (${params.map((_, i) => `$${i + 1}`).join(", ")}) ` +
      `ON CONFLICT (${k}) DO UPDATE SET ${updates.join(", ")} ` +
      `WHERE target.${p} IS NULL OR target.${p} COLLATE "C" < EXCLUDED.${p} COLLATE "C" ` +
      `OR (target.${p} = EXCLUDED.${p} AND (target.${f} IS NULL OR target.${f} < EXCLUDED.${f}))`;
    return { sql, params };
  }

  /** The upsert as an effect of the guard's commit: one transaction holds both. */
  atomicUpsert(ctx: PostgresFenceSource, row: Record<string, unknown>): PostgresAtomicWrite {
    return {
      engine: "postgres",
      description: `upsert ${this.#table}/${String(row[this.#o.keyColumn])}`,
      ...this.upsert(ctx, row),
    };
  }

  /** Queues the upsert on the guard's context, to be applied in the commit's transaction. */
  upsertAtCommit(
    ctx: PostgresFenceSource & { atCommit(write: PostgresAtomicWrite): void },
    row: Record<string, unknown>,
  ): void {
    ctx.atCommit(this.atomicUpsert(ctx, row));
  }

  /** The upsert now, in its own statement (a handler's effect outside the commit). */
  async put(ctx: PostgresFenceSource, row: Record<string, unknown>): Promise<"applied" | "stale"> {
    const { sql, params } = this.upsert(ctx, row); // bad input throws here, not as a store failure
    try {
      const out = await this.#o.pool.query(sql, params);
      return (out.rowCount ?? 0) > 0 ? "applied" : "stale";
    } catch (error) {
      throw postgresStoreError("fenced upsert", this.#table, error);
    }
  }

  /** The row whose key column is `key`; undefined when absent. */
  async get(key: unknown): Promise<Record<string, unknown> | undefined> {
    try {
      const out = await this.#o.pool.query(
        `SELECT * FROM ${this.#table} WHERE ${quote(this.#o.keyColumn)} = $1`,
        [key],
      );
      return out.rows[0];
    } catch (error) {
      throw postgresStoreError("read", this.#table, error);
    }
  }
}
