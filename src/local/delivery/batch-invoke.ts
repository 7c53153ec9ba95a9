import { randomUUID } from "node:crypto";
import type { Simulation } from "../../sim/live/simulation.js";
import type { SourceKind } from "../../sim/live/trace.js";
import type { LocalFunction, LocalInvocationResult } from "./local-function.js";

/** One copy of a polled batch, as `invokeBatch` delivers it. */
export interface BatchDelivery {
  source: SourceKind;
  /** The invocation's event: `{ Records: [...] }`. */
  event: unknown;
  /** The records' ids, for the trace. */
  records: string[];
  attempt: number;
  /** Waited before the invocation (the delivery fault's delay). */
  delayMs: number;
  /** A copy sent again by the duplicate fault. */
  duplicate: boolean;
}

/**
 * One invocation of a batch an event source mapping polled (SQS, Kinesis, DynamoDB Streams): after its delay, the
 * delivery traced, then one run under a request id of its own (the poller, not Lambda, retries a batch).
 */
export async function invokeBatch(
  sim: Simulation,
  fn: LocalFunction,
  d: BatchDelivery,
): Promise<LocalInvocationResult> {
  await sim.sleeper.sleep(d.delayMs);
  const requestId = randomUUID();
  sim.trace.emit({
    type: "delivery",
    atMs: sim.now(),
    source: d.source,
    functionName: fn.name,
    requestId,
    runId: requestId,
    records: d.records,
    attempt: d.attempt,
    duplicate: d.duplicate,
  });
  return fn.invoke(d.event, { attempt: d.attempt, requestId, runId: requestId });
}
