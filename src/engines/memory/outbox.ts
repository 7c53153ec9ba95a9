import { byCommitTime } from "../../outbox/entry-order.js";
import { outboxWriteDescription } from "../../outbox/message-id.js";
import type * as Outbox from "../../outbox/types.js";
import type { MemoryAtomicWrite } from "./store.js";

interface Held {
  entry: Outbox.OutboxEntry;
  owner?: string;
  leaseUntilMs: number;
  sentAtMs?: number;
}

/**
 * The reference outbox: entries in a Map, folded into a `MemoryStore`'s commit, claimed by relays with the rule every
 * engine's reader follows (src/outbox/types.ts): the oldest unsent entry of each subject, not held by a live lease.
 * One process only, as the memory store.
 */
export class MemoryOutbox implements Outbox.Outbox, Outbox.OutboxReader {
  readonly engine = "memory";
  readonly #entries = new Map<string, Held>();

  entryWrite(entry: Outbox.OutboxEntry): MemoryAtomicWrite {
    return {
      engine: "memory",
      description: outboxWriteDescription(entry.messageId),
      land: () => {
        // A message id is one event's message: a second commit of it cannot happen (the state refuses it).
        if (this.#entries.has(entry.messageId)) return false;
        this.#entries.set(entry.messageId, { entry, leaseUntilMs: 0 });
        return true;
      },
    };
  }

  async claim(req: Outbox.ClaimEntriesRequest): Promise<Outbox.ClaimedEntry[]> {
    const heads = new Map<string, Held>();
    for (const h of this.#entries.values()) {
      if (h.sentAtMs !== undefined) continue;
      const head = heads.get(h.entry.subject);
      if (head === undefined || h.entry.order < head.entry.order) heads.set(h.entry.subject, h);
    }
    const free = [...heads.values()]
      .filter((h) => h.leaseUntilMs <= req.nowMs)
      .sort((a, b) => byCommitTime(a.entry, b.entry))
      .slice(0, req.limit);
    return free.map((h) => {
      h.owner = req.owner;
      h.leaseUntilMs = req.leaseUntilMs;
      return { ...h.entry, owner: req.owner, leaseUntilMs: req.leaseUntilMs };
    });
  }

  async markSent(entry: Outbox.ClaimedEntry, sentAtMs: number): Promise<boolean> {
    const h = this.#entries.get(entry.messageId);
    if (h === undefined) return false;
    if (h.sentAtMs !== undefined) return true;
    if (h.owner !== entry.owner || h.leaseUntilMs !== entry.leaseUntilMs) return false;
    h.sentAtMs = sentAtMs;
    return true;
  }

  async pending(): Promise<Outbox.OutboxEntry[]> {
    return [...this.#entries.values()].filter((h) => h.sentAtMs === undefined).map((h) => h.entry);
  }

  /** Every entry committed so far, sent or not (tests, the simulator's checks). */
  entries(): Outbox.OutboxEntry[] {
    return [...this.#entries.values()].map((h) => h.entry);
  }
}
