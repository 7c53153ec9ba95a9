import type { Chooser } from "./chooser.js";
import type { HistoryFaultInjector } from "./faults.js";
import { DEDUPE_WINDOW_MS } from "./outbox-config.js";
import { redeliver } from "./redelivery.js";
import type { SourceOptions } from "./source.js";
import type { VirtualScheduler } from "./virtual-time.js";

/** What a relay (or, broken, a handler) hands the destination: the message, its id, its subject and group. */
export interface SentMessage {
  readonly messageId: string;
  readonly body: string;
  readonly subject: string;
  readonly groupId: string;
}

/** One send, as the checks read them: who sent it, when, and whether the queue enqueued it. */
export interface QueueSend extends SentMessage {
  readonly by: string;
  readonly atMs: number;
  /** False: a FIFO queue dropped it, a send of its id having been enqueued within the deduplication window. */
  readonly enqueued: boolean;
}

export interface QueueMessage extends SentMessage {
  readonly seq: number;
  visibleAt: number;
  receives: number;
}

/** One receive: the consumer's invocation must finish by `deadline` (virtual ms), as Lambda's timeout. */
export interface QueueReceipt {
  message: QueueMessage;
  receive: number;
  deadline: number;
}

/** The queue's visibility, redelivery delay and receives before the DLQ, as the histories' source's. */
export interface QueueOptions extends Omit<SourceOptions, "reorder"> {
  fifo: boolean;
  /** Standard queue: share of receives after which the message is delivered once more. */
  duplicateRate: number;
}

/**
 * The destination of an outbox history, on virtual time: an SQS queue feeding a consumer. Standard: at least once,
 * any visible message in any order, now and then one delivered twice. FIFO: a group's messages in the order they were
 * enqueued, none while its first is in flight or waiting for redelivery, and a send whose message id (the
 * deduplication id) was enqueued less than 5 minutes before is taken but not enqueued; one after the window is
 * delivered again. Both redeliver until deleted, and dead-letter after `maxReceives`.
 */
export class SimQueue {
  readonly sends: QueueSend[] = [];
  readonly messages: QueueMessage[] = [];
  /** Message ids in the order consumers first received them. */
  readonly firstReceived: string[] = [];
  readonly dlq: string[] = [];
  readonly #received = new Set<string>();
  readonly #enqueuedAt = new Map<string, number>();
  #seq = 0;
  #closed = false;
  #waiters: (() => void)[] = [];

  constructor(
    readonly sim: VirtualScheduler,
    readonly chooser: Chooser,
    readonly faults: HistoryFaultInjector,
    readonly o: QueueOptions,
  ) {}

  send(m: SentMessage, by: string): void {
    const now = this.sim.now;
    const last = this.#enqueuedAt.get(m.messageId);
    const enqueued = !(this.o.fifo && last !== undefined && now - last < DEDUPE_WINDOW_MS);
    const { messageId, body, subject, groupId } = m;
    this.sends.push({ messageId, body, subject, groupId, by, atMs: now, enqueued });
    if (!enqueued) {
      this.faults.count("deduplicated");
      return;
    }
    if (this.o.fifo && last !== undefined) this.faults.count("dedupe-expired");
    this.#enqueuedAt.set(messageId, now);
    this.#enqueue({ messageId, body, subject, groupId }, 0);
  }

  #enqueue(m: SentMessage, delayMs: number): void {
    this.messages.push({ ...m, seq: this.#seq++, visibleAt: this.sim.now + delayMs, receives: 0 });
    this.#wake();
  }

  /** No more sends: consumers stop once the queue is empty. */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  /** Resolves at the next send (or close): a consumer's long poll of an empty queue. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** A message to consume, how long until one is visible, `empty` (sends may come) or `done` (closed and empty). */
  receive(): QueueReceipt | { waitMs: number } | "empty" | "done" {
    if (this.messages.length === 0) return this.#closed ? "done" : "empty";
    const now = this.sim.now;
    const candidates = this.o.fifo ? groupHeads(this.messages) : this.messages;
    const visible = candidates.filter((m) => m.visibleAt <= now);
    if (visible.length === 0)
      return { waitMs: Math.max(1, Math.min(...candidates.map((m) => m.visibleAt)) - now) };
    const m = visible[this.chooser.choose(visible.length, "receive")] as QueueMessage;
    if (!this.o.fifo && m !== this.messages.find((x) => x.visibleAt <= now)) this.faults.count("reorder");
    m.receives++;
    m.visibleAt = now + this.o.visibilityMs;
    if (!this.o.fifo && this.chooser.chance(this.o.duplicateRate)) {
      this.faults.count("duplicate");
      this.#enqueue(m, this.chooser.int(0, this.o.visibilityMs));
    }
    if (!this.#received.has(m.messageId)) {
      this.#received.add(m.messageId);
      this.firstReceived.push(m.messageId);
    }
    return { message: m, receive: m.receives, deadline: now + this.o.visibilityMs };
  }

  /** The consumer ran past its deadline: the message neither deleted nor returned (visible when its visibility ends). */
  timedOut(r: QueueReceipt): boolean {
    return this.sim.now >= r.deadline;
  }

  ack(r: QueueReceipt): void {
    if (this.timedOut(r)) return;
    const i = this.messages.indexOf(r.message);
    if (i >= 0) this.messages.splice(i, 1);
  }

  /** Not acknowledged: delivered again after a delay, or dead-lettered after maxReceives. */
  nack(r: QueueReceipt): void {
    if (this.timedOut(r)) return;
    if (redeliver(this.messages, r.message, this.o, this.sim.now, this.chooser) === "dead") {
      this.dlq.push(r.message.messageId);
    }
  }
}

/** Each group's first message: the only one of its group a FIFO queue may deliver. */
function groupHeads(messages: readonly QueueMessage[]): QueueMessage[] {
  const heads = new Map<string, QueueMessage>();
  for (const m of messages) if (!heads.has(m.groupId)) heads.set(m.groupId, m);
  return [...heads.values()];
}
