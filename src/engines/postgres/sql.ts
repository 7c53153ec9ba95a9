import { type ClaimRequest, landedClaim, type StateRecord, type StateStatus } from "../../core/state.js";
import type { ClaimAndCommitRequest, ClaimResult, CommitRequest } from "../../core/store.js";

/**
 * The store's statements. Each step is one statement that locks the key's row (`FOR UPDATE` in the `old` CTE),
 * decides on that locked row, and returns it whatever the decision: a refusal costs no second round trip.
 *
 * Isolation: READ COMMITTED. `FOR UPDATE` waits for a concurrent writer of the row and then yields its newest
 * version; the update is joined to that row and its condition reads that row's columns, so the decision is made
 * on the version the row lock protects until the statement (or transaction) ends. Two concurrent claimers are
 * serialised on the row lock: the second decides on the first one's claim and is refused (`fence`, lease).
 * A row that is absent from the statement's snapshot takes the INSERT branch; if a concurrent claimer inserted it
 * meanwhile, `ON CONFLICT DO NOTHING` leaves it alone and the statement reports neither a landing nor a row
 * (`race`): the caller runs it again, now seeing the row.
 */

/** How many times a store runs a statement that reported `race` before it gives up (a retryable StoreError). */
export const RACE_RETRIES = 5;

/** Columns of the state row as the statements return them (`old.*`), prefixed so they never clash. */
const COLUMNS = [
  "state_key",
  "status",
  "position",
  "identity",
  "fence",
  "token",
  "lease_until_ms",
  "committed_position",
  "committed_identity",
  "result",
  "result_omitted_bytes",
  "committed_fingerprint",
  "attempts",
  "expires_at",
] as const;

export type StateRow = Record<(typeof COLUMNS)[number], string | number | null>;

/** The statement's answer: whether its write landed, and the row it decided on (undefined: absent). */
export interface Decided {
  landed: boolean;
  old: StateRecord | undefined;
}

/** The columns of a decided row, as `SELECT` returns them. */
const SELECT_DECIDED = `SELECT (SELECT count(*) FROM ins) + (SELECT count(*) FROM upd) AS landed, ${COLUMNS.map((c) => `old.${c}`).join(", ")}
FROM (SELECT 1) AS one LEFT JOIN old ON true`;

/**
 * The locked row, its columns named: a column added to the table later (by `migrate` in a newer version) does not
 * change the statement's result, which a prepared statement on a live connection would refuse.
 */
const LOCK_OLD = (table: string) =>
  `WITH old AS (SELECT ${COLUMNS.join(", ")} FROM ${table} WHERE state_key = $1 FOR UPDATE)`;

/**
 * The claim condition of src/core/state.ts on the locked row: no live holder (or, with supersede, an older one),
 * newer than the committed position, and a higher fence. $2 position, $4 fence, $8 lease expired before (ms), $9
 * supersede.
 */
const CLAIM_CONDITION = `(old.status <> 'running' OR old.lease_until_ms < $8 OR ($9 AND old.position < $2))
  AND (old.committed_position IS NULL OR old.committed_position < $2)
  AND old.fence < $4`;

/**
 * Claim ($1 key, $2 position, $3 identity, $4 fence, $5 token, $6 lease until, $7 expires at, $8 expired
 * before, $9 supersede): a new row, or the locked row taken over. The attempt counter counts on when the same
 * identity claims again, else starts at 1.
 */
export function claimSql(table: string): string {
  return `${LOCK_OLD(table)},
ins AS (
  INSERT INTO ${table} (state_key, status, position, identity, fence, token, lease_until_ms, expires_at, attempts)
  SELECT $1::text, 'running', $2::text, $3::text, $4::bigint, $5::text, $6::bigint, $7::bigint, 1
  WHERE NOT EXISTS (SELECT 1 FROM old)
  ON CONFLICT (state_key) DO NOTHING RETURNING 1
),
upd AS (
  UPDATE ${table} AS t SET status = 'running', position = $2, identity = $3, fence = $4, token = $5,
    lease_until_ms = $6, expires_at = $7,
    attempts = CASE WHEN old.identity = $3 THEN old.attempts + 1 ELSE 1 END
  FROM old WHERE t.state_key = old.state_key AND ${CLAIM_CONDITION}
  RETURNING 1
)
${SELECT_DECIDED}`;
}

/**
 * Claim and commit in one (`apply`), parameters as for the claim but $6 the result (no lease), $10 the omitted
 * result bytes and $11 the payload fingerprint: the row ends done with this event committed at its fence; no lease, no attempts.
 */
export function claimAndCommitSql(table: string): string {
  return `${LOCK_OLD(table)},
ins AS (
  INSERT INTO ${table} (state_key, status, position, identity, fence, token, expires_at, committed_position,
    committed_identity, result, result_omitted_bytes, committed_fingerprint, attempts)
  SELECT $1::text, 'done', $2::text, $3::text, $4::bigint, $5::text, $7::bigint, $2, $3, $6::text, $10::bigint,
    $11::text, 0
  WHERE NOT EXISTS (SELECT 1 FROM old)
  ON CONFLICT (state_key) DO NOTHING RETURNING 1
),
upd AS (
  UPDATE ${table} AS t SET status = 'done', position = $2, identity = $3, fence = $4, token = $5,
    lease_until_ms = NULL, expires_at = $7, committed_position = $2, committed_identity = $3, result = $6,
    result_omitted_bytes = $10, committed_fingerprint = $11, attempts = 0
  FROM old WHERE t.state_key = old.state_key AND ${CLAIM_CONDITION}
  RETURNING 1
)
${SELECT_DECIDED}`;
}

/**
 * An update of the holder's row ($1 key, $2 fence; `set` uses $3…): only while the fence holds and the claim runs.
 * Commit, renew and release are this statement with their SET clause.
 */
export function fencedSql(table: string, set: string): string {
  return `${LOCK_OLD(table)},
ins AS (SELECT 1 WHERE false),
upd AS (
  UPDATE ${table} AS t SET ${set}
  FROM old WHERE t.state_key = old.state_key AND old.fence = $2 AND old.status = 'running'
  RETURNING 1
)
${SELECT_DECIDED}`;
}

/**
 * Commit: $3 expires at, $4 result, $5 omitted result bytes, $6 payload fingerprint. The claimed event becomes the
 * committed one.
 */
export const COMMIT_SET = `status = 'done', committed_position = old.position, committed_identity = old.identity,
  expires_at = $3, result = $4, result_omitted_bytes = $5, committed_fingerprint = $6, lease_until_ms = NULL,
  attempts = 0`;

/** Renew: $3 lease until, $4 expires at (never moved back). */
export const RENEW_SET = "lease_until_ms = $3, expires_at = GREATEST(COALESCE(old.expires_at, 0), $4)";

export const RELEASE_SET = "status = 'released', lease_until_ms = NULL";

/**
 * The claim's parameters, in the order of the claim statements (here and in inline-sql.ts): `row` is $1, the state
 * key in the state table, the user's row key in inline state.
 */
export function claimParams(req: ClaimRequest, row: string): unknown[] {
  return [
    row,
    req.position,
    req.identity,
    req.fence,
    req.token,
    req.leaseUntilMs,
    req.expiresAtSeconds,
    req.nowMs - req.leaseGraceMs,
    req.supersede,
  ];
}

/** Claim and commit's parameters: the claim's, with $6 the result (apply holds no lease), $10 and $11 added. */
export function claimAndCommitParams(req: ClaimAndCommitRequest, row: string): unknown[] {
  const params = claimParams(req, row);
  params[5] = req.result ?? null;
  params.push(req.resultOmittedBytes ?? null, req.fingerprint ?? null);
  return params;
}

/** The commit's parameters ($1 as for the claim): $2 fence, $3 expires at, $4 result, $5 omitted bytes, $6 fingerprint. */
export function commitParams(req: CommitRequest, row: string): unknown[] {
  return [
    row,
    req.fence,
    req.expiresAtSeconds,
    req.result ?? null,
    req.resultOmittedBytes ?? null,
    req.fingerprint ?? null,
  ];
}

/** A claim statement's decision as the contract's result: the attempt counts on for the same identity. */
export function claimResult(
  d: Omit<Decided, "old"> & { old: StateRecord | undefined },
  req: ClaimRequest,
): ClaimResult {
  const { landed, old } = d;
  if (landed) {
    const attempt = old?.identity === req.identity ? old.attempts + 1 : 1;
    return { claimed: true, fence: req.fence, attempt, leaseUntilMs: req.leaseUntilMs, previous: old };
  }
  const state = old as StateRecord;
  // A retry of a claim that landed (its response was lost): ours.
  return landedClaim(state, req) ?? { claimed: false, state };
}

/** `SELECT_DECIDED`'s row as a decision. */
export function decided(row: Record<string, unknown> | undefined): Decided {
  if (!row) throw new Error("unreachable: the decided row is always returned");
  return { landed: Number(row.landed) > 0, old: row.state_key == null ? undefined : toRecord(row) };
}

/** The column of each StateRecord field: the state table's, or inline state's `eo_*` (inline-sql.ts). */
export type StateColumns = Record<Exclude<keyof StateRecord, "key">, string>;

const STATE_TABLE_COLUMNS: StateColumns = {
  status: "status",
  position: "position",
  identity: "identity",
  fence: "fence",
  attempts: "attempts",
  token: "token",
  leaseUntilMs: "lease_until_ms",
  committedPosition: "committed_position",
  committedIdentity: "committed_identity",
  result: "result",
  resultOmittedBytes: "result_omitted_bytes",
  committedFingerprint: "committed_fingerprint",
  expiresAtSeconds: "expires_at",
};

/** The numeric fields: bigint columns arrive as strings. */
const NUMERIC = new Set<keyof StateColumns>([
  "fence",
  "attempts",
  "leaseUntilMs",
  "resultOmittedBytes",
  "expiresAtSeconds",
]);

/** A row's state columns `c` as the store contract's record; NULL columns are left out. */
export function recordFromColumns(key: string, row: Record<string, unknown>, c: StateColumns): StateRecord {
  const record: StateRecord = {
    key,
    status: String(row[c.status]) as StateStatus,
    position: String(row[c.position]),
    identity: String(row[c.identity]),
    fence: Number(row[c.fence]),
    attempts: Number(row[c.attempts] ?? 0),
  };
  for (const field of Object.keys(c) as (keyof StateColumns)[]) {
    const v = row[c[field]];
    if (field in record || v == null) continue;
    Object.assign(record, { [field]: NUMERIC.has(field) ? Number(v) : String(v) });
  }
  return record;
}

/** A state table row as the store contract's record. */
export function toRecord(row: Record<string, unknown>): StateRecord {
  return recordFromColumns(String(row.state_key), row, STATE_TABLE_COLUMNS);
}
