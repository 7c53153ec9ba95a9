/**
 * The store's SQL, per state table. Every step is one conditional statement whose `WHERE` is the state machine's
 * condition (src/core/state.ts); `RETURNING` says whether it applied, in the same round trip.
 */
export interface StateSql {
  read: string;
  /** Claim (supersede or not): the upsert counts attempts itself (one statement, no second write). */
  claim: string;
  claimSupersede: string;
  claimAndCommit: string;
  claimAndCommitSupersede: string;
  commit: string;
  renew: string;
  release: string;
  deleteExpired: string;
  forget: string;
}

/** The claim condition on the existing row `s` (the insert is unconditional: an absent row is claimable). */
function claimWhere(supersede: boolean): string {
  const holderGone = supersede
    ? "(s.status <> 'running' OR s.lease_until < @expiredBefore OR s.pos < excluded.pos)"
    : "(s.status <> 'running' OR s.lease_until < @expiredBefore)";
  return `${holderGone} AND (s.cpos IS NULL OR s.cpos < excluded.pos) AND s.fence < excluded.fence`;
}

/** Only the holder of the fence, while its claim runs, may renew, release or commit. */
const FENCED = "WHERE state_key = @key AND fence = @fence AND status = 'running' RETURNING 1 AS ok";

function claimSql(t: string, supersede: boolean): string {
  return `INSERT INTO "${t}" AS s (state_key, status, pos, eid, fence, tok, lease_until, expires_at, att)
VALUES (@key, 'running', @pos, @eid, @fence, @tok, @lease, @exp, 1)
ON CONFLICT (state_key) DO UPDATE SET status = 'running', pos = excluded.pos, eid = excluded.eid,
  fence = excluded.fence, tok = excluded.tok, lease_until = excluded.lease_until, expires_at = excluded.expires_at,
  att = CASE WHEN s.eid = excluded.eid THEN coalesce(s.att, 0) + 1 ELSE 1 END
WHERE ${claimWhere(supersede)}
RETURNING att`;
}

/** Claim and commit in one upsert: the claimed event is the committed one; no lease, no attempt counter. */
function claimAndCommitSql(t: string, supersede: boolean): string {
  return `INSERT INTO "${t}" AS s (state_key, status, pos, eid, cpos, ceid, fence, tok, expires_at, result, result_omitted,
  cfp)
VALUES (@key, 'done', @pos, @eid, @pos, @eid, @fence, @tok, @exp, @res, @rskip, @cfp)
ON CONFLICT (state_key) DO UPDATE SET status = 'done', pos = excluded.pos, eid = excluded.eid, cpos = excluded.pos,
  ceid = excluded.eid, fence = excluded.fence, tok = excluded.tok, lease_until = NULL, expires_at = excluded.expires_at,
  att = NULL, result = excluded.result, result_omitted = excluded.result_omitted, cfp = excluded.cfp
WHERE ${claimWhere(supersede)}
RETURNING 1 AS ok`;
}

export function stateSql(t: string): StateSql {
  return {
    read: `SELECT * FROM "${t}" WHERE state_key = @key`,
    claim: claimSql(t, false),
    claimSupersede: claimSql(t, true),
    claimAndCommit: claimAndCommitSql(t, false),
    claimAndCommitSupersede: claimAndCommitSql(t, true),
    commit: `UPDATE "${t}" SET status = 'done', cpos = pos, ceid = eid, expires_at = @exp, result = @res,
  result_omitted = @rskip, cfp = @cfp, lease_until = NULL, att = NULL ${FENCED}`,
    // The expiry only moves on: TTL stays ahead of the lease.
    renew: `UPDATE "${t}" SET lease_until = @lease, expires_at = max(expires_at, @exp) ${FENCED}`,
    release: `UPDATE "${t}" SET status = 'released', lease_until = NULL ${FENCED}`,
    // As DynamoDB's TTL: renewals keep a live claim's expiry ahead of its lease, so no live claim is removed.
    deleteExpired: `DELETE FROM "${t}" WHERE expires_at < @now`,
    forget: `DELETE FROM "${t}" WHERE state_key = @key`,
  };
}
