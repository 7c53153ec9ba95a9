import type { Chooser } from "./chooser.js";

/** How a queue redelivers a message that was not acknowledged. */
export interface RedeliveryOptions {
  /** Redelivery delay after a failed delivery: [min, max] ms. */
  retryDelayMs: readonly [number, number];
  /** Deliveries before a message goes to the dead-letter queue. */
  maxReceives: number;
}

/** A queued message as redelivery sees it. */
export interface Redeliverable {
  visibleAt: number;
  receives: number;
}

/**
 * A receive of `m` not acknowledged, as SQS treats it: `m` visible again after a redelivery delay, or, once it has
 * been received `maxReceives` times, taken out of `messages` (`dead`: the caller dead-letters it). `gone` when `m` is
 * no longer queued (acknowledged meanwhile by a concurrent delivery of the same message).
 */
export function redeliver<M extends Redeliverable>(
  messages: M[],
  m: M,
  o: RedeliveryOptions,
  nowMs: number,
  chooser: Chooser,
): "again" | "dead" | "gone" {
  const i = messages.indexOf(m);
  if (i < 0) return "gone";
  if (m.receives >= o.maxReceives) {
    messages.splice(i, 1);
    return "dead";
  }
  const [min, max] = o.retryDelayMs;
  m.visibleAt = nowMs + chooser.int(min, max);
  return "again";
}
