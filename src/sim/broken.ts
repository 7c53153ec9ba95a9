import { StoreError } from "../core/errors.js";
import type { ClaimRequest, StateRecord } from "../core/state.js";
import type { CommitRequest, CommitResult, FencedResult, StateStore } from "../core/store.js";
import type { StoreWrapper } from "./history.js";

/**
 * Deliberately broken stores, each undoing one thing the guard relies on, for the tests that show the simulator
 * catches it (and `npm run chaos -- --break <name>`). They wrap a correct store and delegate the rest.
 */
function delegate(inner: StateStore, over: Partial<StateStore>): StateStore {
  return {
    engine: inner.engine,
    maxResultBytes: inner.maxResultBytes,
    claim: (r) => inner.claim(r),
    renew: (r) => inner.renew(r),
    commit: (r) => inner.commit(r),
    claimAndCommit: (r) => inner.claimAndCommit(r),
    release: (r) => inner.release(r),
    read: (k) => inner.read(k),
    canFold: (w) => inner.canFold(w),
    ...over,
  };
}

type Op = "claim" | "commit" | "renew";
type Req<K extends Op> = Parameters<StateStore[K]>[0];

/** Breaks one operation, deciding from the item as it was just before the call (read unfaulted). */
function onItem<K extends Op>(
  op: K,
  decide: (inner: StateStore, req: Req<K>, item: StateRecord | undefined) => ReturnType<StateStore[K]>,
): StoreWrapper {
  return (inner) =>
    delegate(inner, { [op]: async (req: Req<K>) => decide(inner, req, await inner.read(req.key)) });
}

export const BROKEN_STORES: Record<string, { what: string; wrap: StoreWrapper }> = {
  "commit-ignores-fence": {
    what: "commit succeeds for whoever holds the item, not only the fence that claimed it (a zombie commits)",
    wrap: onItem("commit", (inner, req, s) =>
      inner.commit(s?.status === "running" ? { ...req, fence: s.fence } : req),
    ),
  },
  "forgets-tokens": {
    what: "claims keep no token, so a retried claim whose first attempt landed looks like someone else's",
    wrap: (inner) => {
      let n = 0;
      return delegate(inner, { claim: (req: ClaimRequest) => inner.claim({ ...req, token: `anon-${n++}` }) });
    },
  },
  "renew-keeps-lease": {
    what: "renewals say ok but never move the lease",
    wrap: onItem(
      "renew",
      async (_, req, s): Promise<FencedResult> =>
        s?.fence === req.fence && s.status === "running" ? { ok: true } : { ok: false, state: s },
    ),
  },
  "sticky-lease": {
    what: "claims write a lease ten times too long, so a stopped holder blocks its subject",
    wrap: (inner) =>
      delegate(inner, {
        claim: (req) =>
          inner.claim({ ...req, leaseUntilMs: req.leaseUntilMs + 9 * (req.leaseUntilMs - req.nowMs) }),
      }),
  },
  "counter-fences": {
    what: "fences count up from the item's (1 on a new item) instead of the clock: TTL makes them repeat",
    wrap: onItem("claim", (inner, req, s) => inner.claim({ ...req, fence: (s?.fence ?? 0) + 1 })),
  },
  "early-ttl": {
    what: "committed items expire at once (a dedupe window shorter than redelivery)",
    wrap: (inner, forget) =>
      delegate(inner, {
        async commit(req: CommitRequest) {
          const r = await inner.commit(req);
          if (r.committed) await forget(req.key);
          return r;
        },
      }),
  },
  "lying-commit": {
    what: "commit answers committed without writing anything",
    wrap: (inner) => delegate(inner, { commit: async () => ({ committed: true, writes: [] }) }),
  },
  "refuses-landed": {
    what: "a claim-and-commit that landed answers that it was refused for good (a non-retryable error)",
    wrap: (inner) =>
      delegate(inner, {
        async claimAndCommit(req) {
          const r = await inner.claimAndCommit(req);
          if (r.claimed) throw new StoreError("refused (broken store)", { retryable: false });
          return r;
        },
      }),
  },
  "commit-forgets-own": {
    what: "a retried commit whose first attempt landed is refused instead of recognised",
    wrap: onItem(
      "commit",
      async (inner, req, s): Promise<CommitResult> =>
        s?.status === "done" && s.fence === req.fence ? { committed: false, state: s } : inner.commit(req),
    ),
  },
};

/**
 * Guarded durable steps keyed otherwise than by the step's identity (`npm run chaos -- --durable --break <name>`),
 * to show that the durable histories' repeated step names catch it (src/sim/durable-history.ts).
 */
export const BROKEN_STEPS: Record<string, { what: string }> = {
  "step-name-markers": {
    what: "markers keyed by execution and step name only, so a second step of one name (a charge per order line) finds the first one's marker and is skipped",
  },
};

/**
 * A stream consumer's checkpoint that does not follow the answer (`npm run chaos -- --streams --break <name>`), to
 * show that the stream histories' checks catch records a stream never redelivers (src/sim/stream-history.ts).
 */
export const BROKEN_STREAMS: Record<string, { what: string }> = {
  "checkpoint-past-failures": {
    what: "the checkpoint moves past every batch whatever its answer, as a mapping without ReportBatchItemFailures whose function reports failures instead of throwing: a failed record is never read again",
  },
};

/**
 * Inline row mappings that are not one-to-one (`npm run chaos -- --engine dynamodb|postgres --inline --break
 * <name>`), to show that the simulator's adversarial subjects catch one (src/sim/names.ts).
 */
export const BROKEN_ROW_KEYS: Record<string, { what: string; rowKey: (stateKey: string) => string }> = {
  "colliding-row-keys": {
    what: "an ordered subject's row is its subject as it is, so a subject spelled like an unordered event's key (u#<len>#<subject><identity>) shares that event's row",
    rowKey: (key) => (key.startsWith("o#") ? key.slice(2) : key),
  },
};

/**
 * Pre-write checks weakened (`npm run chaos -- --engine valkey --break <name>`), to show that the simulator's foreign
 * values (src/sim/foreign-values.ts) catch a commit that lands half.
 */
export const BROKEN_WRITE_CHECKS: Record<string, { what: string }> = {
  "pattern-write-check": {
    what: "a commit's writes are checked by a pattern (an integer of at most 18 digits), not by the server's rules: a counter someone else wrote as 007 passes, its INCRBY fails after the writes before it landed, and every retry lands them again",
  },
};

/**
 * Outbox relays and publishers that break publish-at-commit (`npm run chaos -- --outbox --break <name>`), to show that
 * the outbox histories' checks catch each (src/sim/outbox-checks.ts).
 */
export const BROKEN_OUTBOX = {
  "relay-mark-before-send": {
    what: "the relay marks an entry sent, then sends it: a crash (or a failed send) between the two loses the message, and the subject's next one goes first",
  },
  "publish-outside-commit": {
    what: "the handler sends its messages itself instead of ctx.publish: runs that never commit send them too, and the consumer may take a failed run's message",
  },
  "relay-fresh-ids": {
    what: "the relay sends each message under an id of its own (as SQS assigns one), not the entry's: every resend is a new message downstream",
  },
} as const satisfies Record<string, { what: string }>;

export type OutboxBreak = keyof typeof BROKEN_OUTBOX;
