import {
  custom,
  integer,
  nested,
  optionsRule,
  required,
  resolveOptions,
  schemaFor,
} from "../../core/options.js";
import { type RelayRound, type RunningRelay, startOutboxRelay } from "../../outbox/relay.js";
import type { OutboxEntry, OutboxReader, OutboxSender } from "../../outbox/types.js";
import type { Simulation } from "../../sim/live/simulation.js";
import type { Prng } from "../../sim/prng.js";
import { isDuration, isShare, numberField } from "../fields.js";

/** A relay's faults, seeded from the runtime's seed. Rates are shares in [0, 1]. */
export interface RelayFaultOptions {
  /** Share of sends after which the relay dies before marking the entry sent: it is sent again after its lease. */
  crashAfterSendRate?: number;
  /** Share of sends that fail before anything is sent (the destination refused, a timeout). */
  failSendRate?: number;
  /** Share of sends made twice (an SDK retry after a lost answer). */
  duplicateSendRate?: number;
}

/** The local relay of an outbox: copies racing, their lease and pace, and faults. */
export interface LocalOutboxRelayOptions {
  reader: OutboxReader;
  sender: OutboxSender;
  /** Relays running side by side (each claims for itself). Default 2. */
  copies?: number;
  /** How long a claim holds: a crashed send's entry is sent again this long after. Default 1 000. */
  leaseMs?: number;
  batchSize?: number;
  /** The wait after a round that found nothing. Default 50. */
  pollIntervalMs?: number;
  faults?: RelayFaultOptions;
}

const share = numberField("a number in [0, 1]", isShare, { default: 0 });

const RELAY_FAULT_OPTIONS = schemaFor<RelayFaultOptions>()({
  crashAfterSendRate: share,
  failSendRate: share,
  duplicateSendRate: share,
});

function resolveRelayFaults(o: RelayFaultOptions | undefined): Required<RelayFaultOptions> {
  const f = resolveOptions("relay faults", RELAY_FAULT_OPTIONS, o ?? {});
  optionsRule(
    "relay faults",
    f.crashAfterSendRate + f.failSendRate <= 1,
    "crashAfterSendRate + failSendRate must not exceed 1",
  );
  return f;
}

const LOCAL_OUTBOX_RELAY_OPTIONS = schemaFor<LocalOutboxRelayOptions>()({
  reader: required(
    custom<OutboxReader>("an OutboxReader", (v) => typeof (v as OutboxReader)?.claim === "function"),
  ),
  sender: required(
    custom<OutboxSender>("an OutboxSender", (v) => typeof (v as OutboxSender)?.send === "function"),
  ),
  copies: integer({ min: 1, max: 16, default: 2 }),
  leaseMs: integer({ min: 1, default: 1000 }),
  batchSize: integer({ min: 1, max: 1000, default: 25 }),
  pollIntervalMs: numberField("a non-negative number of ms", isDuration, { default: 50 }),
  faults: nested(resolveRelayFaults),
});

/** What the relays did, over every copy: sends, and the faults that hit them. */
export interface RelayStats extends RelayRound {
  sends: number;
  crashesAfterSend: number;
  failedSends: number;
  duplicateSends: number;
}

/** A send that failed on purpose (a fault), so the relay leaves the entry to its lease. */
class InjectedRelayFault extends Error {}

/**
 * The outbox relay of a local pipeline: `copies` pollers (`startOutboxRelay`, as the SQL and Valkey engines run it
 * in production, and DynamoDB's where no stream relay runs) racing over one outbox, with seeded faults on their
 * sends. Settled (`drained`) when the outbox holds no unsent entry.
 */
export class LocalOutboxRelay {
  readonly #faultCounts = { sends: 0, crashesAfterSend: 0, failedSends: 0, duplicateSends: 0 };
  readonly #options: ReturnType<typeof resolve>;
  readonly #prng: Prng;
  readonly #name: string;
  #relays: RunningRelay[] = [];

  constructor(options: LocalOutboxRelayOptions, sim: Simulation, name: string) {
    this.#options = resolve(options);
    this.#prng = sim.prng.fork(`relay:${name}`);
    this.#name = name;
  }

  start(): void {
    if (this.#relays.length > 0) return;
    const o = this.#options;
    const sender: OutboxSender = { send: (entry) => this.#send(entry) };
    this.#relays = Array.from({ length: o.copies }, (_, i) =>
      startOutboxRelay({
        reader: o.reader,
        sender,
        owner: `local-relay-${i + 1}-${process.pid}`,
        leaseMs: o.leaseMs,
        batchSize: o.batchSize,
        pollIntervalMs: o.pollIntervalMs,
      }),
    );
  }

  async #send(entry: OutboxEntry): Promise<void> {
    const f = this.#options.faults ?? resolveRelayFaults(undefined);
    const draw = this.#prng.next();
    if (draw < f.failSendRate) {
      this.#faultCounts.failedSends++;
      throw new InjectedRelayFault("send failed (injected)");
    }
    await this.#options.sender.send(entry);
    this.#faultCounts.sends++;
    if (this.#prng.chance(f.duplicateSendRate)) {
      await this.#options.sender.send(entry);
      this.#faultCounts.sends++;
      this.#faultCounts.duplicateSends++;
    }
    if (draw < f.failSendRate + f.crashAfterSendRate) {
      this.#faultCounts.crashesAfterSend++;
      throw new InjectedRelayFault("the relay died after sending (injected)");
    }
  }

  /** What `idle` names when this relay does not drain. */
  describe(): string {
    return `the outbox relay ${this.#name}`;
  }

  /** True when every committed entry has been sent and marked. */
  async drained(): Promise<boolean> {
    return (await this.#options.reader.pending()).length === 0;
  }

  /** What the relays did so far, over every copy. */
  get stats(): RelayStats {
    const rounds: RelayRound = { claimed: 0, sent: 0, failed: 0, unmarked: 0 };
    for (const r of this.#relays)
      for (const k of Object.keys(rounds) as (keyof RelayRound)[]) rounds[k] += r.totals[k];
    return { ...rounds, ...this.#faultCounts };
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.#relays.map((r) => r.stop()));
  }
}

function resolve(options: LocalOutboxRelayOptions) {
  return resolveOptions("outbox relay", LOCAL_OUTBOX_RELAY_OPTIONS, options);
}
