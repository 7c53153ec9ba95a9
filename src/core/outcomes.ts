/**
 * Every way a delivery can end, and whether it is acknowledged: the one table the Lambda adapters, the local
 * runtime, the logs and the metrics read. A status is acknowledged only when a commit for its event landed (ours,
 * or another holder's that will land) or the event can never run (duplicate, stale, bad input); "we cannot know"
 * is never acknowledged, so the source redelivers it.
 */
export const OUTCOMES = {
  /** The handler ran and its commit landed. */
  processed: { acknowledge: true, metric: "processed" },
  /** The same event was committed before; its stored result is replayed. */
  duplicate: { acknowledge: true, metric: "duplicate" },
  /** A newer event of the subject was committed or is running. */
  stale: { acknowledge: true, metric: "stale" },
  /** The handler ran, but another claim with a newer fence holds the subject: that holder commits or retries. */
  "lease-lost": { acknowledge: true, metric: "leaseLost" },
  /** An older event of the subject holds a live lease (busy policy `retry`, or waiting ran out of time). */
  busy: { acknowledge: false, metric: "busy" },
  /** The same event runs elsewhere (in-flight policy `retry`, or waiting ran out of time). */
  "in-flight": { acknowledge: false, metric: "inFlight" },
  /** The handler threw (or its result could not be committed); the claim was released where possible. */
  failed: { acknowledge: false, metric: "failed" },
  /** The store could not confirm a claim, lease or commit (an outage, or lost responses past every retry). */
  unconfirmed: { acknowledge: false, metric: "unconfirmed" },
} as const;

export type GuardOutcomeStatus = keyof typeof OUTCOMES;

export function isAcknowledged(status: GuardOutcomeStatus): boolean {
  return OUTCOMES[status].acknowledge;
}
