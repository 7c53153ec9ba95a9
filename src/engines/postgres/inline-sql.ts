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
 * Parameters: the step's (`INLINE_STEPS`), then a row write's values, one parameter per column.
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

/**
 * A step of inline state as data, from which both its statement (`InlineStatements`) and its server function
 * (inline-functions.ts) are built: one text for the condition and the writes.
 */
export interface InlineStep {
  readonly name: "claim" | "apply" | "commit" | "renew" | "release" | "put";
  /** Types of the step's parameters after the row key ($2…). */
  readonly params: readonly string[];
  /** The state columns of a new row; undefined: the step needs a claim, so it never inserts. */
  readonly insert?: Readonly<Record<string, string>>;
  /** The update of the locked row (`old.*`: its values before the update). */
  readonly set: string;
  /** When the update lands, on the locked row. */
  readonly condition: string;
  /** The (position, fence) a row write is fenced by; undefined: the step carries no row write. */
  readonly write?: { readonly position: string; readonly fence: string };
}

/**
 * The claim condition of src/core/state.ts on the locked row (as sql.ts's, on the `eo_*` columns): no state yet, or
 * no live holder (or, with supersede, an older one), newer than the committed position, and a higher fence.
 */
const CLAIM_CONDITION = `(old.eo_fence IS NULL OR ((old.eo_st <> 'running' OR old.eo_lease < $8 OR ($9 AND old.eo_pos < $2))
  AND (old.eo_cpos IS NULL OR old.eo_cpos < $2)
  AND old.eo_fence < $4))`;

/** The holder's steps: only while the fence holds and its claim runs. */
const FENCED_CONDITION = "old.eo_fence = $2 AND old.eo_st = 'running'";

const CLAIM_TYPES = ["text", "text", "bigint", "text", "bigint", "bigint", "bigint", "boolean"];

/**
 * The steps. Parameters: claim $1 row key, $2 position, $3 identity, $4 fence, $5 token, $6 lease until, $7 expires
 * at, $8 expired before, $9 supersede; apply the same with $6 the result, and $10 omitted result bytes, $11
 * fingerprint; commit $1 row key, $2 fence, $3 expires at, $4 result, $5 omitted result bytes, $6 fingerprint; renew
 * $1, $2 fence, $3 lease until, $4 expires at (never moved back); release and put $1, $2 fence.
 */
export const INLINE_STEPS = {
  claim: {
    name: "claim",
    params: CLAIM_TYPES,
    insert: {
      eo_st: "'running'",
      eo_pos: "$2",
      eo_eid: "$3",
      eo_fence: "$4",
      eo_tok: "$5",
      eo_lease: "$6",
      eo_exp: "$7",
      eo_att: "1",
    },
    set: `eo_st = 'running', eo_pos = $2, eo_eid = $3, eo_fence = $4, eo_tok = $5, eo_lease = $6, eo_exp = $7,
    eo_att = CASE WHEN old.eo_eid = $3 THEN COALESCE(old.eo_att, 0) + 1 ELSE 1 END`,
    condition: CLAIM_CONDITION,
  },
  apply: {
    name: "apply",
    params: [...CLAIM_TYPES.slice(0, 4), "text", ...CLAIM_TYPES.slice(5), "bigint", "text"],
    insert: {
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
    },
    set: `eo_st = 'done', eo_pos = $2, eo_eid = $3, eo_fence = $4, eo_tok = $5, eo_lease = NULL, eo_exp = $7,
    eo_cpos = $2, eo_ceid = $3, eo_res = $6, eo_rskip = $10, eo_cfp = $11, eo_att = 0`,
    condition: CLAIM_CONDITION,
    write: { position: "$2", fence: "$4" },
  },
  // The claimed event becomes the committed one; the lease and the attempt count go.
  commit: {
    name: "commit",
    params: ["bigint", "bigint", "text", "bigint", "text"],
    set: `eo_st = 'done', eo_cpos = old.eo_pos, eo_ceid = old.eo_eid, eo_exp = $3, eo_res = $4,
    eo_rskip = $5, eo_cfp = $6, eo_lease = NULL, eo_att = 0`,
    condition: FENCED_CONDITION,
    write: { position: "old.eo_pos", fence: "$2" },
  },
  renew: {
    name: "renew",
    params: ["bigint", "bigint", "bigint"],
    set: "eo_lease = $3, eo_exp = GREATEST(COALESCE(old.eo_exp, 0), $4)",
    condition: FENCED_CONDITION,
  },
  release: {
    name: "release",
    params: ["bigint"],
    set: "eo_st = 'released', eo_lease = NULL",
    condition: FENCED_CONDITION,
  },
  // The holder's direct row write (`putRow`): the state is kept.
  put: {
    name: "put",
    params: ["bigint"],
    set: "eo_st = old.eo_st",
    condition: FENCED_CONDITION,
    write: { position: "old.eo_pos", fence: "$2" },
  },
} as const satisfies Record<string, InlineStep>;

export type InlineStepName = keyof typeof INLINE_STEPS;

/** The state columns a new row gets: the step's, and the row write's fence when it carries one. */
export function insertedState(step: InlineStep, withRow: boolean): Record<string, string> {
  const state: Record<string, string> = { ...step.insert };
  if (withRow && step.write)
    Object.assign(state, { eo_wpos: step.write.position, eo_wfence: step.write.fence });
  return state;
}

/**
 * The SET items of a step's update of the locked row, `target` the updated table's alias: the step's own, and with a
 * row write (`withRow`) the row write's fence, each `CASE WHEN <row not newer> THEN <new> ELSE <kept> END`.
 */
export function stateSets(step: InlineStep, withRow: boolean, target: string): string[] {
  if (!withRow || !step.write) return [step.set];
  const column = fencedColumn(step, target);
  return [step.set, column("eo_wpos", step.write.position), column("eo_wfence", step.write.fence)];
}

/** A column of a row write: set to `value` unless the row holds newer work, `target` the updated table's alias. */
export function fencedColumn(step: InlineStep, target: string): (column: string, value: string) => string {
  const notNewer = rowNotNewer(step);
  return (column, value) => `${column} = CASE WHEN ${notNewer} THEN ${value} ELSE ${target}.${column} END`;
}

/**
 * The row holds no newer work than the step's row write: no write yet, an older position, or the same position by
 * this fence or an older one.
 */
export function rowNotNewer(step: InlineStep): string {
  if (!step.write) return "NULL::boolean";
  const { position, fence } = step.write;
  return `(old.eo_wpos IS NULL OR old.eo_wpos < ${position} OR (old.eo_wpos = ${position} AND old.eo_wfence <= ${fence}))`;
}

/** The statements of one table and key column, and of each set of written columns (cached by the store). */
export class InlineStatements {
  readonly table: string;
  /** The key column, quoted. */
  readonly key: string;

  constructor(table: string, keyColumn: string) {
    this.table = table;
    this.key = quote(keyColumn);
  }

  /** Locks the row and names its state columns and key `old.*`. */
  lockOld(): string {
    return `WITH old AS (SELECT ${this.key} AS row_key, ${INLINE_COLUMN_NAMES.join(", ")} FROM ${this.table}
  WHERE ${this.key} = $1 FOR UPDATE)`;
  }

  /**
   * A step's statement, with the row write's `columns` (their values from the parameter after the step's; undefined:
   * no row write): a new row (if the step inserts), or the locked row updated under the step's condition, and the
   * locked row returned either way.
   */
  statement(step: InlineStep, columns?: readonly string[]): string {
    const firstValue = step.params.length + 2;
    const insert = step.insert
      ? this.#insert(step, columns, firstValue)
      : "ins AS (SELECT NULL::boolean AS wrote WHERE false)";
    return `${this.lockOld()},
${insert},
${this.#update(step, columns, firstValue)}
SELECT (SELECT count(*) FROM ins) + (SELECT count(*) FROM upd) AS landed,
  COALESCE((SELECT wrote FROM upd), (SELECT wrote FROM ins)) AS wrote, old.*
FROM (SELECT 1) AS one LEFT JOIN old ON true`;
  }

  /**
   * `INSERT` of a new row: the key, the state columns and the row write's columns. Only when the row is absent
   * (not even proposed otherwise: a `BEFORE INSERT` trigger of the user's must not see a row that is never
   * inserted); the untyped parameters take the types of the target columns.
   */
  #insert(step: InlineStep, columns: readonly string[] | undefined, firstValue: number): string {
    const state = insertedState(step, columns !== undefined);
    const names = [this.key, ...Object.keys(state), ...(columns ?? []).map(quote)];
    const values = ["$1", ...Object.values(state), ...(columns ?? []).map((_, i) => `$${firstValue + i}`)];
    return `ins AS (
  INSERT INTO ${this.table} (${names.join(", ")}) SELECT ${values.join(", ")} WHERE NOT EXISTS (SELECT 1 FROM old)
  ON CONFLICT (${this.key}) DO NOTHING RETURNING true AS wrote
)`;
  }

  /**
   * `UPDATE` of the locked row under the step's condition: the state SET clauses, and the row write's columns
   * unless the row holds newer work.
   */
  #update(step: InlineStep, columns: readonly string[] | undefined, firstValue: number): string {
    const withRow = columns !== undefined && step.write !== undefined;
    const sets = stateSets(step, withRow, "t");
    const column = fencedColumn(step, "t");
    if (withRow) for (const [i, c] of columns.entries()) sets.push(column(quote(c), `$${firstValue + i}`));
    return `upd AS (
  UPDATE ${this.table} AS t SET ${sets.join(",\n    ")}
  FROM old WHERE t.${this.key} = old.row_key AND ${step.condition}
  RETURNING ${withRow ? rowNotNewer(step) : "NULL::boolean"} AS wrote
)`;
  }

  /** The state of one row. */
  read(): string {
    return `SELECT ${this.key} AS row_key, ${INLINE_COLUMN_NAMES.join(", ")} FROM ${this.table} WHERE ${this.key} = $1`;
  }
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
