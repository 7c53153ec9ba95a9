import type { Chooser } from "./chooser.js";
import type { HistoryFaultInjector } from "./faults.js";
import { type RedeliveryOptions, redeliver } from "./redelivery.js";
import type { VirtualScheduler } from "./virtual-time.js";

export interface Message {
  readonly id: number;
  readonly event: number;
  visibleAt: number;
  receives: number;
}

/** One receive of a message: the invocation must finish by `deadline` (virtual ms), as Lambda's timeout. */
export interface Receipt {
  message: Message;
  receive: number;
  deadline: number;
}

export interface SourceOptions extends RedeliveryOptions {
  /** A received message becomes visible again after this unless acknowledged (SQS visibility timeout). */
  visibilityMs: number;
  /** Workers may take any visible message, not only the oldest (reordering as a choice). */
  reorder: boolean;
}

/**
 * An at-least-once queue on virtual time, like SQS feeding Lambda: every message is delivered again until
 * acknowledged (or it reaches the DLQ), a message still in flight when its visibility ends is delivered again
 * concurrently, and the fault injector adds duplicate deliveries and reordering.
 */
export class Source {
  readonly messages: Message[] = [];
  readonly dlq: number[] = [];
  #ids = 0;

  constructor(
    readonly sim: VirtualScheduler,
    readonly chooser: Chooser,
    readonly faults: HistoryFaultInjector,
    readonly o: SourceOptions,
  ) {}

  send(event: number, delayMs = 0): void {
    this.messages.push({ id: this.#ids++, event, visibleAt: this.sim.now + delayMs, receives: 0 });
  }

  /** A message to deliver, or how long to wait for one, or `done` when the queue is empty. */
  receive(): Receipt | { waitMs: number } | "done" {
    if (this.messages.length === 0) return "done";
    const now = this.sim.now;
    const visible = this.messages.filter((m) => m.visibleAt <= now);
    if (visible.length === 0) return { waitMs: Math.min(...this.messages.map((m) => m.visibleAt)) - now };
    const i = this.o.reorder ? this.chooser.choose(visible.length, "receive") : 0;
    if (i > 0) this.faults.count("reorder");
    const m = visible[i] as Message;
    m.receives++;
    m.visibleAt = now + this.o.visibilityMs;
    if (this.chooser.chance(this.faults.config.duplicateRate)) {
      this.faults.count("duplicate");
      this.send(m.event, this.chooser.int(0, this.o.visibilityMs));
    }
    return { message: m, receive: m.receives, deadline: now + this.o.visibilityMs };
  }

  /**
   * The invocation ran past its deadline: Lambda stopped it, so it neither deletes the message nor returns it;
   * the message is visible again when its visibility ends (as a delete with a stale receipt handle may not delete).
   */
  timedOut(r: Receipt): boolean {
    return this.sim.now >= r.deadline;
  }

  ack(r: Receipt): void {
    if (this.timedOut(r)) return;
    const m = r.message;
    const i = this.messages.indexOf(m);
    if (i >= 0) this.messages.splice(i, 1);
  }

  /** Not acknowledged: delivered again after a delay, or dead-lettered after maxReceives. */
  nack(r: Receipt): void {
    if (this.timedOut(r)) return;
    if (redeliver(this.messages, r.message, this.o, this.sim.now, this.chooser) === "dead") {
      this.dlq.push(r.message.event);
    }
  }
}
