import { randomUUID } from "node:crypto";
import { type Clock, systemClock } from "../core/clock.js";
import { custom, func, integer, required, resolveOptions, schemaFor, string } from "../core/options.js";
import { OutboxEntryInvalidError } from "./errors.js";
import type { ClaimedEntry, OutboxReader, OutboxSender } from "./types.js";

/** The options of `relayOutbox` and `startOutboxRelay`. */
export interface OutboxRelayOptions {
  reader: OutboxReader;
  sender: OutboxSender;
  /** This relay's name among the copies that run (default a random UUID): each copy needs its own. */
  owner?: string;
  /** Entries claimed per round. Default 25. */
  batchSize?: number;
  /** How long a claim holds: a relay that dies holding entries delays them this long. Default 30 000. */
  leaseMs?: number;
  /** `startOutboxRelay`: the wait after a round that found nothing (or failed). Default 200. */
  pollIntervalMs?: number;
  /** Clock (virtual time in the simulator). Default the system clock. */
  clock?: Clock;
  /** Called with each entry a send of which failed (it is sent again once its lease runs out). */
  onSendError?: (entry: ClaimedEntry, error: unknown) => void;
}

const OUTBOX_RELAY_OPTIONS = schemaFor<OutboxRelayOptions>()({
  reader: required(
    custom<OutboxReader>("an OutboxReader", (v) => typeof (v as OutboxReader)?.claim === "function"),
  ),
  sender: required(
    custom<OutboxSender>("an OutboxSender", (v) => typeof (v as OutboxSender)?.send === "function"),
  ),
  owner: string(),
  batchSize: integer({ min: 1, max: 1000, default: 25 }),
  leaseMs: integer({ min: 1, default: 30_000 }),
  pollIntervalMs: integer({ min: 0, default: 200 }),
  clock: custom<Clock>("a Clock (see src/core/clock.ts)", (v) => typeof v === "object" && v !== null),
  onSendError: func<(entry: ClaimedEntry, error: unknown) => void>(),
});

/** What one round did. */
export interface RelayRound {
  claimed: number;
  sent: number;
  /** Sends that threw: those entries stay claimed until their lease ends, then are sent again. */
  failed: number;
  /** Sent, but marking them failed or found them claimed by another relay: sent again, under the same id. */
  unmarked: number;
  /**
   * Refused for good by the sender (`OutboxEntryInvalidError`: no send can succeed): marked, so that they do not hold
   * their subject's later messages forever, and reported to `onSendError`.
   */
  rejected: number;
}

/**
 * One round of a relay: claim the heads of the subjects' unsent entries, send each (with its message id), mark each
 * sent. A crash between a send and its mark leaves the entry to be claimed and sent again once the lease runs out:
 * at least once, under one id, which the destination (FIFO: deduplication id) or the consumer (a guard keyed by the
 * id) turns into once.
 */
export async function relayOutbox(options: OutboxRelayOptions): Promise<RelayRound> {
  const o = resolve(options);
  return round(o);
}

type Resolved = ReturnType<typeof resolve>;

function resolve(options: OutboxRelayOptions) {
  const o = resolveOptions("outbox relay", OUTBOX_RELAY_OPTIONS, options);
  return { ...o, owner: o.owner ?? randomUUID(), clock: o.clock ?? systemClock };
}

async function round(o: Resolved): Promise<RelayRound> {
  const nowMs = o.clock.now();
  const entries = await o.reader.claim({
    limit: o.batchSize,
    owner: o.owner,
    nowMs,
    leaseUntilMs: nowMs + o.leaseMs,
  });
  const r: RelayRound = { claimed: entries.length, sent: 0, failed: 0, unmarked: 0, rejected: 0 };
  // Heads of distinct subjects: independent of each other, so sent at once.
  await Promise.all(
    entries.map(async (entry) => {
      try {
        await o.sender.send(entry);
      } catch (error) {
        o.onSendError?.(entry, error);
        if (!(error instanceof OutboxEntryInvalidError)) {
          r.failed++;
          return;
        }
        r.rejected++;
        await o.reader.markSent(entry, o.clock.now()).catch(() => false);
        return;
      }
      r.sent++;
      const marked = await o.reader.markSent(entry, o.clock.now()).catch(() => false);
      if (!marked) r.unmarked++;
    }),
  );
  return r;
}

/** A running relay (`startOutboxRelay`). */
export interface RunningRelay {
  /** Rounds so far, summed. */
  readonly totals: RelayRound;
  /** Stops after the current round. */
  stop(): Promise<void>;
  /** Resolves once a round finds nothing to send (tests and shutdown: everything committed so far is sent). */
  drained(): Promise<void>;
}

/**
 * Runs rounds until stopped: at once again after a round that sent something, after `pollIntervalMs` otherwise. The
 * SQL and Valkey engines' relay (several copies are safe); DynamoDB's runs on the outbox table's stream instead
 * (`outboxStreamHandler`), or this loop where a stream is not at hand.
 */
export function startOutboxRelay(options: OutboxRelayOptions): RunningRelay {
  const o = resolve(options);
  const totals: RelayRound = { claimed: 0, sent: 0, failed: 0, unmarked: 0, rejected: 0 };
  let stopped = false;
  let waiters: (() => void)[] = [];
  const loop = (async () => {
    while (!stopped) {
      let r: RelayRound | undefined;
      try {
        r = await round(o);
      } catch {
        r = undefined; // the store did not answer: try again after a pause
      }
      if (r) for (const k of Object.keys(totals) as (keyof RelayRound)[]) totals[k] += r[k];
      if (r && r.claimed === 0) {
        for (const w of waiters) w();
        waiters = [];
      }
      if (!r || r.claimed === 0 || r.failed > 0) await o.clock.sleep(o.pollIntervalMs);
    }
  })();
  return {
    totals,
    async stop() {
      stopped = true;
      await loop;
      for (const w of waiters) w();
    },
    drained: () => new Promise<void>((resolve) => waiters.push(resolve)),
  };
}
