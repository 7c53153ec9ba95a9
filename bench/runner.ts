import type { BenchEvent } from "./events.js";
import { type DeliveryOutcome, type HandlerPlan, type Instance, PlannedFailure } from "./impls/types.js";

/** One event to deliver, and what its handler does on each attempt. */
export interface PlannedDelivery {
  event: BenchEvent;
  /** Plan per attempt (1-based); attempts past the list use the last entry. */
  plans: HandlerPlan[];
}

export interface DeliverAllOptions {
  workers: number;
  /** How long the source waits before redelivering a failed delivery (SQS visibility timeout, async retry). */
  redeliveryDelayMs: number;
  /** Deliveries of one event before it is dead-lettered. */
  maxDeliveries: number;
  onDelivered?: () => void;
}

export interface DeliverAllResult {
  elapsedMs: number;
  outcomes: Partial<Record<DeliveryOutcome | "error", number>>;
  redeliveries: number;
  /** Time the redelivered events spent waiting for the source. */
  redeliveryWaitMs: number;
  deadLettered: number;
  /** Latency of every delivery, ms. */
  latenciesMs: number[];
  firstError?: string;
}

/**
 * Delivers events to `workers` concurrent consumers in this process, as a source would: a delivery that is not
 * acknowledged (busy, in flight, failed) is delivered again after `redeliveryDelayMs`.
 */
export async function deliverAll(
  instance: Instance,
  deliveries: PlannedDelivery[],
  options: DeliverAllOptions,
): Promise<DeliverAllResult> {
  const queue = deliveries.map((d) => ({ ...d, attempt: 1 }));
  const result: DeliverAllResult = {
    elapsedMs: 0,
    outcomes: {},
    redeliveries: 0,
    redeliveryWaitMs: 0,
    deadLettered: 0,
    latenciesMs: [],
  };
  let active = 0;
  let scheduled = 0;
  const idle: Array<() => void> = [];
  const wakeAll = () => {
    for (const wake of idle.splice(0)) wake();
  };
  const count = (outcome: DeliveryOutcome | "error") => {
    result.outcomes[outcome] = (result.outcomes[outcome] ?? 0) + 1;
  };

  const worker = async () => {
    for (;;) {
      const item = queue.shift();
      if (!item) {
        if (active === 0 && scheduled === 0) {
          wakeAll();
          return;
        }
        await new Promise<void>((resolve) => idle.push(resolve));
        continue;
      }
      active++;
      const plan = item.plans[Math.min(item.attempt, item.plans.length) - 1] ?? { workMs: 0 };
      const started = performance.now();
      let ack: boolean;
      try {
        const delivered = await instance.deliver(item.event, plan);
        count(delivered.outcome);
        ack = delivered.ack;
      } catch (error) {
        // The invocation threw: Lambda reports it failed and the source redelivers.
        if (error instanceof PlannedFailure) count("failed");
        else {
          count("error");
          result.firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        }
        ack = false;
      }
      result.latenciesMs.push(performance.now() - started);
      active--;
      options.onDelivered?.();
      if (!ack) {
        if (item.attempt >= options.maxDeliveries) result.deadLettered++;
        else {
          scheduled++;
          result.redeliveries++;
          result.redeliveryWaitMs += options.redeliveryDelayMs;
          setTimeout(() => {
            scheduled--;
            queue.push({ ...item, attempt: item.attempt + 1 });
            wakeAll();
          }, options.redeliveryDelayMs);
        }
      }
      wakeAll();
    }
  };

  const started = performance.now();
  await Promise.all(Array.from({ length: options.workers }, worker));
  result.elapsedMs = performance.now() - started;
  return result;
}
