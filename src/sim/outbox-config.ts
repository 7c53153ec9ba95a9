import { createPrng } from "./prng.js";

/**
 * How an outbox history (src/sim/outbox-history.ts) publishes, relays and consumes: the relay copies and their faults,
 * the destination (standard or FIFO) and the downstream consumers. Drawn from the history's seed beside its
 * HistoryConfig (config.ts), so `--replay <seed> --outbox` rebuilds both.
 */
export interface OutboxSettings {
  /** Relay copies racing (each restarts under a new name after a crash). */
  relays: number;
  /** The relays' `leaseMs` and `batchSize`; the wait after a round that claimed nothing (doubling while idle). */
  relayLeaseMs: number;
  batchSize: number;
  pollMs: number;
  /** Most messages one event publishes (each event publishes 1..this, the same in every run). */
  maxMessages: number;
  /** Relay faults in the history at most, and the share of relay calls that get one. */
  relayFaults: number;
  relayFaultRate: number;
  /** Of the stalls, the share longer than the FIFO deduplication window. */
  pastDedupeShare: number;
  /** A FIFO destination: in order per group, a send within 5 minutes of an enqueued one of its id dropped. */
  fifo: boolean;
  /** Standard destination: share of receives that deliver the message twice. */
  duplicateRate: number;
  /** Downstream: consumers, their share of `apply`, the share of runs whose handler throws. */
  consumers: number;
  applyShare: number;
  handlerErrorRate: number;
}

/** SQS FIFO's deduplication window: a send of a message id within it of an enqueued one is not enqueued again. */
export const DEDUPE_WINDOW_MS = 5 * 60_000;

export function outboxSettings(seed: number): OutboxSettings {
  const r = createPrng(seed).fork("outbox");
  return {
    relays: r.int(1, 3),
    relayLeaseMs: r.pick([300, 1000, 3000]),
    batchSize: r.int(1, 5),
    pollMs: r.pick([20, 100, 250]),
    maxMessages: r.int(1, 3),
    relayFaults: r.int(0, 4),
    relayFaultRate: r.pick([0.05, 0.15, 0.3]),
    pastDedupeShare: r.pick([0, 0.3]),
    fifo: r.chance(0.5),
    duplicateRate: r.pick([0, 0.1, 0.3]),
    consumers: r.int(1, 2),
    applyShare: r.pick([0, 0.3]),
    handlerErrorRate: r.pick([0, 0.1, 0.25]),
  };
}
