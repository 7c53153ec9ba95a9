import type { Clock } from "../core/clock.js";
import { StoreError } from "../core/errors.js";
import { type RelayRound, relayOutbox } from "../outbox/relay.js";
import type { ClaimedEntry, OutboxEntry, OutboxReader, OutboxSender } from "../outbox/types.js";
import type { FaultKind } from "./faults.js";
import { DEDUPE_WINDOW_MS } from "./outbox-config.js";
import type { RunningOutboxHistory } from "./running-outbox-history.js";

/** Relay copies' clocks differ by up to twice this (ms). */
const MAX_RELAY_OFFSET_MS = 50;
/** Scheduler labels: relay slot `i` is "worker" 100 + i. */
const RELAY_IDS = 100;

/** A short name of a message id, for traces. */
export function short(id: string): string {
  return id.slice(4, 10);
}

/**
 * The relays' fault budget: at most `os.relayFaults` in a history, each relay call drawing one with
 * `os.relayFaultRate`.
 */
export class RelayFaults {
  #used = 0;
  constructor(readonly o: RunningOutboxHistory) {}

  draw<K extends FaultKind>(kinds: readonly K[]): K | undefined {
    const { os, history } = this.o;
    if (this.#used >= os.relayFaults || !history.chooser.chance(os.relayFaultRate)) return undefined;
    this.#used++;
    const kind = kinds[history.chooser.choose(kinds.length, "relay fault")] as K;
    history.faults.count(kind);
    return kind;
  }
}

/**
 * One relay slot: copies of the real relay (`relayOutbox` rounds on the history's virtual clock) one after the
 * other, a crashed copy replaced by a new one (a new name) after a while; returns once a copy ran to quiescence.
 */
export async function relaySlot(o: RunningOutboxHistory, faults: RelayFaults, slot: number): Promise<void> {
  const { history } = o;
  const offsetMs = history.chooser.int(-MAX_RELAY_OFFSET_MS, MAX_RELAY_OFFSET_MS);
  for (let generation = 0; ; generation++) {
    const copy = new RelayCopy(o, faults, slot, `r${slot}.${generation}`, history.sim.clock(offsetMs));
    if ((await copy.run()) === "quiescent") return;
    const ms = history.chooser.int(50, 2 * o.os.relayLeaseMs);
    history.observer.log(() => `${copy.owner} crashed: a new copy starts in ${ms}ms`);
    await history.sim.sleep(ms);
  }
}

/**
 * A relay process: its reader and sender behind faults of its own (crashes, stalls, failed and lost sends, lost
 * claims and marks). A crash stops every call of the copy where it is: it never answers again.
 */
class RelayCopy {
  #crashed = false;
  #onCrash: () => void = () => {};
  readonly #crash = new Promise<"crashed">((resolve) => {
    this.#onCrash = () => resolve("crashed");
  });

  constructor(
    readonly o: RunningOutboxHistory,
    readonly faults: RelayFaults,
    readonly slot: number,
    readonly owner: string,
    readonly clock: Clock,
  ) {}

  /**
   * Rounds until it crashes, or until it is quiescent: every commit made (the upstream workers are done) and a
   * round, more than a lease (and the clocks' spread) into a time with no claim of its own, claimed nothing: every
   * lease taken before that time has run out by every relay's clock, so whatever a crashed copy held was free.
   */
  async run(): Promise<"crashed" | "quiescent"> {
    const { history, os } = this.o;
    const inner = await history.sim.track(() => this.o.outbox.reader());
    const reader = this.#reader(inner);
    const sender = this.#sender(reader);
    let idleSince: number | undefined;
    let waitMs = os.pollMs;
    for (;;) {
      const startedAt = history.sim.now;
      const round = relayOutbox({
        reader,
        sender,
        owner: this.owner,
        batchSize: os.batchSize,
        leaseMs: os.relayLeaseMs,
        clock: this.clock,
        onSendError: (e, error) =>
          history.observer.log(() => `${this.owner} send ${short(e.messageId)} failed: ${String(error)}`),
      }).catch((error: unknown) => error);
      const r = await Promise.race([round, this.#crash]);
      if (r === "crashed") return r;
      if (isRound(r) && r.claimed === 0) {
        idleSince ??= startedAt;
        const quiet = startedAt - idleSince > os.relayLeaseMs + 2 * MAX_RELAY_OFFSET_MS;
        if (quiet && this.o.upstreamDone()) {
          history.observer.log(() => `${this.owner} quiescent`);
          return "quiescent";
        }
      } else {
        // Claimed something, or the round failed (its claim may have landed): leases of its own may be running.
        idleSince = undefined;
        waitMs = os.pollMs;
        if (!isRound(r)) history.observer.log(() => `${this.owner} round failed: ${String(r)}`);
        if (isRound(r) && r.failed === 0) continue; // at once again, as startOutboxRelay
      }
      await history.sim.sleep(waitMs);
      waitMs = Math.min(2 * waitMs, Math.max(os.pollMs, os.relayLeaseMs / 2));
    }
  }

  /** A scheduling point before each call; a crashed copy's calls never return. */
  async #point(label: string): Promise<void> {
    await this.o.history.sim.gate(RELAY_IDS + this.slot, `${this.owner} ${label}`);
    await this.#alive();
  }

  async #alive(): Promise<void> {
    if (this.#crashed) await new Promise<never>(() => {});
  }

  #die(): Promise<never> {
    this.#crashed = true;
    this.#onCrash();
    return new Promise<never>(() => {});
  }

  #reader(inner: OutboxReader): OutboxReader {
    const { history } = this.o;
    const log = (line: () => string) => history.observer.log(() => `${this.owner} ${line()}`);
    return {
      claim: async (req) => {
        await this.#point("claim");
        const fault = this.faults.draw(["claim-lost", "relay-crash"] as const);
        const entries = await history.sim.track(() => inner.claim(req));
        const said = fault === "claim-lost" ? ", response LOST" : fault ? ", then CRASHES holding them" : "";
        log(() => `claims [${entries.map((e) => short(e.messageId)).join(" ")}]${said}`);
        if (fault === "relay-crash") return this.#die();
        if (fault) throw new StoreError("claim: response lost (injected)");
        return entries;
      },
      markSent: async (entry, sentAtMs) => {
        await this.#point(`mark ${short(entry.messageId)}`);
        const fault = this.faults.draw(["mark-failed", "mark-lost"] as const);
        if (fault === "mark-failed") {
          log(() => `mark ${short(entry.messageId)} -> failed (not sent)`);
          throw new StoreError("markSent: failed before sending (injected)");
        }
        const marked = await history.sim.track(() => inner.markSent(entry, sentAtMs));
        log(() => `mark ${short(entry.messageId)} -> ${marked}${fault ? ", response LOST" : ""}`);
        if (fault) throw new StoreError("markSent: response lost (injected)");
        return marked;
      },
      pending: () => history.sim.track(() => inner.pending()),
    };
  }

  /**
   * Sends to the history's queue. A stall first (the lease runs out, another copy sends, this one sends late), then
   * the send may fail, or reach the queue with its response lost, or the copy crashes after it, before the relay
   * marks it. Broken (`relay-mark-before-send`): the mark first, a crash after it, then the send.
   */
  #sender(reader: OutboxReader): OutboxSender {
    const { history, os, queue, broken } = this.o;
    const log = (line: () => string) => history.observer.log(() => `${this.owner} ${line()}`);
    let sends = 0;
    return {
      send: async (entry: OutboxEntry) => {
        const id = short(entry.messageId);
        await this.#point(`send ${id}`);
        if (this.faults.draw(["relay-stall"] as const)) {
          const past = history.chooser.chance(os.pastDedupeShare);
          if (past) history.faults.count("stall-past-dedupe");
          // Past the window: past the window of another copy's send too, which comes once the lease has run out and
          // a copy polled (its wait grows to half a lease while idle).
          const ms =
            (past ? DEDUPE_WINDOW_MS + 3 * os.relayLeaseMs : os.relayLeaseMs) +
            history.chooser.int(1, os.relayLeaseMs);
          log(() => `STALLS ${ms}ms about to send ${id}`);
          await history.sim.sleep(ms);
          await this.#alive();
          log(() => `wakes, sends ${id} late`);
        }
        if (broken === "relay-mark-before-send") {
          await reader.markSent(entry as ClaimedEntry, this.clock.now());
          if (this.faults.draw(["relay-crash"] as const)) {
            log(() => `CRASHES after marking ${id}, before sending it`);
            return this.#die();
          }
        }
        const fault = this.faults.draw(["send-failed", "send-lost"] as const);
        if (fault === "send-failed") throw new Error(`send of ${id} failed (injected)`);
        const messageId =
          broken === "relay-fresh-ids" ? `${entry.messageId}~${this.owner}~${sends++}` : entry.messageId;
        queue.send(
          { messageId, body: entry.body, subject: entry.subject, groupId: entry.groupId },
          this.owner,
        );
        log(() => `sent ${id}${fault ? ", response LOST" : ""}`);
        if (fault) throw new Error(`send of ${id}: response lost (injected)`);
        if (broken !== "relay-mark-before-send" && this.faults.draw(["relay-crash"] as const)) {
          log(() => `CRASHES after sending ${id}, before marking it`);
          return this.#die();
        }
      },
    };
  }
}

function isRound(r: unknown): r is RelayRound {
  return typeof r === "object" && r !== null && "claimed" in r;
}
