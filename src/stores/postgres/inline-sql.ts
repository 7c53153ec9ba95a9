import type { StateRecord } from "../../core/state.js";
import { quote } from "./schema.js";
import { recordFromColumns, type StateColumns } from "./sql.js";

/**
 * The statements of inline state on PostgreSQL (`InlinePostgresStore`): the guard's state lives in `eo_*` columns of
 * the user's own table, beside the row's own columns. They follow the state table's statements (sql.ts): the `old`
 * CTE locks the row (`FOR UPDATE`), the decision is made on it, and the locked row comes back whatever the
 * decision, so a refusal costs no second round trip. Differences:
 * - a row may exist without state (the user wrote it): its `eo_fence` is NULL, and any claim takes it;
 * - a new row is an `INSERT … SELECT … WHERE NOT EXISTS (old) ON CONFLICT (key) DO NOTHING`, whose untyped
 *   parameters take the types of the user's columns (an integer key, a jsonb column);
 * - the user's columns written by an event (a "row write") are set in the same statement as the state, each as
 *   `CASE WHEN <row not newer> THEN $n ELSE col END`: fenced by the position and fence of the write the row holds
 *   (`eo_wpos`, `eo_wfence`), as the fenced sinks are. A commit whose row write is older than the row's lands without
 *   it, and `wrote` says so.
 *
 * Parameters: claim $1 row key, $2 position, $3 identity, $4 fence, $5 token, $6 lease until (apply: the result),
 * $7 expires at, $8 expired before, $9 supersede; apply adds $10 omitted result bytes, $11 fingerprint; commit
 * $1 row key, $2 fence, $3 expires at, $4 result, $5 omitted result bytes, $6 fingerprint. A row write's values
 * follow, one parameter per column.
 */

/** The state columns, with their types: the same names as the inline DynamoDB store's attributes. */
export const INLINE_COLUMNS = {
  eo_st: "text", // running / done / released
  eo_pos: 'text COLLATE "C"', // position of the current or last claim (compared byte-wise, as JavaScript does)
  eo_eid: "text", // identity of the current or last claim
  eo_fence: "bigint", // fence of the current or last claim; NULL: the row holds no state
  eo_tok: "text", // token of the claim that holds (or last held) the row
  eo_lease: "bigint", // epoch ms, while running
  eo_cpos: 'text COLLATE "C"', // position of the last committed event (the row's own columns are its)
  eo_ceid: "text", // identity of the last committed event
  eo_res: "text", // JSON result replayed to duplicates
  eo_rskip: "bigint", // size of a committed result too large to store
  eo_cfp: "text", // payload fingerprint of the last committed event (opt-in)
  eo_wpos: 'text COLLATE "C"', // position of the claim whose row write the row's columns hold
  eo_wfence: "bigint", // fence of that claim
  eo_exp: "bigint", // epoch seconds the guard would keep state for (no row is deleted for it)
  eo_att: "integer", // consecutive claims of the current identity
} as const;

export const INLINE_COLUMN_NAMES = Object.keys(INLINE_COLUMNS) as (keyof typeof INLINE_COLUMNS)[];

/** The statements of one table and key column, and of each set of written columns (cached by the store). */
export class InlineStatements {
  readonly #table: string;
  readonly #key: string;

  constructor(table: string, keyColumn: string) {
    this.#table = table;
    this.#key = quote(keyColumn);
  }

  /** Locks the row and names its state columns and key `old.*`. */
  #lockOld(): string {
    return `WITH old AS (SELECT ${this.#key} AS row_key, ${INLINE_COLUMN_NAMES.join(", ")} FROM ${this.#table}
  WHERE ${this.#key} = $1 FOR UPDATE)`;
  }

  /** The decision: whether a branch landed, whether its row write applied, and the locked row. */
  #decided(): string {
    return `SELECT (SELECT count(*) FROM ins) + (SELECT count(*) FROM upd) AS landed,
  COALESCE((SELECT wrote FROM upd), (SELECT wrote FROM ins)) AS wrote, old.*
FROM (SELECT 1) AS one LEFT JOIN old ON true`;
  }

  /**
   * `INSERT` of a new row: the key, the given state columns and the row write's columns. Only when the row is absent
   * (not even proposed otherwise: a `BEFORE INSERT` trigger of the user's must not see a row that is never
   * inserted); the untyped parameters take the types of the target columns.
   */
  #insert(state: Record<string, string>, columns: readonly string[], firstValue: number): string {
    const names = [this.#key, ...Object.keys(state), ...columns.map(quote)];
    const values = ["$1", ...Object.values(state), ...columns.map((_, i) => `$${firstValue + i}`)];
    return `ins AS (
  INSERT INTO ${this.#table} (${names.join(", ")}) SELECT ${values.join(", ")} WHERE NOT EXISTS (SELECT 1 FROM old)
  ON CONFLICT (${this.#key}) DO NOTHING RETURNING true AS wrote
)`;
  }

  /**
   * `UPDATE` of the locked row under `condition`: the state SET clauses, and the row write's columns unless the
   * row holds newer work than a write at (`position`, `fence`).
   */
  #update(
    set: string,
    condition: string,
    columns: readonly string[],
    firstValue: number,
    write: { position: string; fence: string } | undefined,
  ): string {
    const sets = [set];
    let wrote = "NULL::boolean";
    if (write) {
      const notNewer = rowNotNewer(write.position, write.fence);
      const fenced = (column: string, value: string) =>
        `${column} = CASE WHEN ${notNewer} THEN ${value} ELSE t.${column} END`;
      sets.push(fenced("eo_wpos", write.position), fenced("eo_wfence", write.fence));
      columns.forEach((c, i) => {
        sets.push(fenced(quote(c), `$${firstValue + i}`));
      });
      wrote = notNewer;
    }
    return `upd AS (
  UPDATE ${this.#table} AS t SET ${sets.join(",\n    ")}
  FROM old WHERE t.${this.#key} = old.row_key AND ${condition}
  RETURNING ${wrote} AS wrote
)`;
  }

  /** Claim ($1–$9): a new row, a row without state, or the locked row taken over. */
  claim(): string {
    const state = {
      eo_st: "'running'",
      eo_pos: "$2",
      eo_eid: "$3",
      eo_fence: "$4",
      eo_tok: "$5",
      eo_lease: "$6",
      eo_exp: "$7",
      eo_att: "1",
    };
    const set = `eo_st = 'running', eo_pos = $2, eo_eid = $3, eo_fence = $4, eo_tok = $5, eo_lease = $6, eo_exp = $7,
    eo_att = CASE WHEN old.eo_eid = $3 THEN COALESCE(old.eo_att, 0) + 1 ELSE 1 END`;
    return `${this.#lockOld()},
${this.#insert(state, [], 0)},
${this.#update(set, CLAIM_CONDITION, [], 0, undefined)}
${this.#decided()}`;
  }

  /** Claim and commit in one (`apply`, $1–$11), with the row write's `columns` from $12 (undefined: no row write). */
  claimAndCommit(columns: readonly string[] | undefined): string {
    const state = {
      eo_st: "'done'",
      eo_pos: "$2",
      eo_eid: "$3",
      eo_fence: "$4",
      eo_tok: "$5",
      eo_exp: "$7",
      eo_cpos: "$2",
      eo_ceid: "$3",
      eo_res: "$6",
      eo_rskip: "$10",
      eo_cfp: "$11",
      eo_att: "0",
      ...(columns !== undefined ? { eo_wpos: "$2", eo_wfence: "$4" } : {}),
    };
    const set = `eo_st = 'done', eo_pos = $2, eo_eid = $3, eo_fence = $4, eo_tok = $5, eo_lease = NULL, eo_exp = $7,
    eo_cpos = $2, eo_ceid = $3, eo_res = $6, eo_rskip = $10, eo_cfp = $11, eo_att = 0`;
    const write = columns !== undefined ? { position: "$2", fence: "$4" } : undefined;
    return `${this.#lockOld()},
${this.#insert(state, columns ?? [], 12)},
${this.#update(set, CLAIM_CONDITION, columns ?? [], 12, write)}
${this.#decided()}`;
  }

  /**
   * An update of the holder's row ($1 row key, $2 fence; `set` uses $3…): only while the fence holds and its claim
   * runs; with a row write of `columns` (their values from `firstValue`), fenced by the claim's position.
   */
  fenced(set: string, columns?: readonly string[], firstValue = 0): string {
    const write = columns !== undefined ? { position: "old.eo_pos", fence: "$2" } : undefined;
    return `${this.#lockOld()},
ins AS (SELECT NULL::boolean AS wrote WHERE false),
${this.#update(set, "old.eo_fence = $2 AND old.eo_st = 'running'", columns ?? [], firstValue, write)}
${this.#decided()}`;
  }

  /** Commit ($1–$6), with the row write's `columns` from $7 (none: the state only). */
  commit(columns: readonly string[] | undefined): string {
    return this.fenced(COMMIT_SET, columns, 7);
  }

  /** The holder's direct row write (`putRow`, $1 row key, $2 fence, the columns from $3): the state is kept. */
  putRow(columns: readonly string[]): string {
    return this.fenced("eo_st = old.eo_st", columns, 3);
  }

  /** The state of one row. */
  read(): string {
    return `SELECT ${this.#key} AS row_key, ${INLINE_COLUMN_NAMES.join(", ")} FROM ${this.#table} WHERE ${this.#key} = $1`;
  }
}

/**
 * The claim condition of src/core/state.ts on the locked row (as sql.ts's, on the `eo_*` columns): no state yet, or
 * no live holder (or, with supersede, an older one), newer than the committed position, and a higher fence.
 */
const CLAIM_CONDITION = `(old.eo_fence IS NULL OR ((old.eo_st <> 'running' OR old.eo_lease < $8 OR ($9 AND old.eo_pos < $2))
  AND (old.eo_cpos IS NULL OR old.eo_cpos < $2)
  AND old.eo_fence < $4))`;

/** Commit: the claimed event becomes the committed one; the lease and the attempt count go. */
const COMMIT_SET = `eo_st = 'done', eo_cpos = old.eo_pos, eo_ceid = old.eo_eid, eo_exp = $3, eo_res = $4,
    eo_rskip = $5, eo_cfp = $6, eo_lease = NULL, eo_att = 0`;

/** Renew: $3 lease until, $4 expires at (never moved back). */
export const INLINE_RENEW_SET = "eo_lease = $3, eo_exp = GREATEST(COALESCE(old.eo_exp, 0), $4)";

export const INLINE_RELEASE_SET = "eo_st = 'released', eo_lease = NULL";

/**
 * The row holds no newer work than a write at (`position`, `fence`): no write yet, an older position, or the same
 * position by this fence or an older one.
 */
function rowNotNewer(position: string, fence: string): string {
  return `(old.eo_wpos IS NULL OR old.eo_wpos < ${position} OR (old.eo_wpos = ${position} AND old.eo_wfence <= ${fence}))`;
}

/** The `eo_*` column of each state field. */
const INLINE_STATE_COLUMNS: StateColumns = {
  status: "eo_st",
  position: "eo_pos",
  identity: "eo_eid",
  fence: "eo_fence",
  attempts: "eo_att",
  token: "eo_tok",
  leaseUntilMs: "eo_lease",
  committedPosition: "eo_cpos",
  committedIdentity: "eo_ceid",
  result: "eo_res",
  resultOmittedBytes: "eo_rskip",
  committedFingerprint: "eo_cfp",
  expiresAtSeconds: "eo_exp",
};

/** A locked row's state as the store contract's record; undefined when it holds none. */
export function inlineRecord(key: string, row: Record<string, unknown> | undefined): StateRecord | undefined {
  if (row == null || row.eo_fence == null) return undefined;
  return recordFromColumns(key, row, INLINE_STATE_COLUMNS);
}
