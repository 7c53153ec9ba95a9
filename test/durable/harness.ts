import type { SQSRecord } from "aws-lambda";
import type { StateStore } from "../../src/core/store.js";
import {
  type DurableDispatcherOptions,
  dispatchedExecution,
  durableSqsDispatcher,
} from "../../src/durable/index.js";
import { createPrng, type Prng } from "../../src/sim/prng.js";
import { lambdaContext } from "../kit/context.js";
import { sqsEvent, sqsRecord } from "../kit/events.js";
import { FakeDurableLambda } from "./fake-lambda.js";

/** One application event: version `version` of order `orderId`. */
export interface Order {
  orderId: string;
  version: number;
}

const order = (body: string) => JSON.parse(body) as Order;

/** The dispatcher options of the orders: one subject per order, its version as the position. */
export function orderOptions(
  store: StateStore,
  lambda: FakeDurableLambda,
  ordered = true,
): DurableDispatcherOptions {
  return {
    store,
    lambda,
    functionName: "orders-workflow:live",
    messages: "accept",
    subject: (m) => order(m.body).orderId,
    ...(ordered
      ? { position: (m) => order(m.body).version }
      : { identity: (m) => `v${order(m.body).version}` }),
    waitIntervalMs: 2,
    maxWaitIntervalMs: 20,
    logger: quietLogger(),
  };
}

/** A Powertools-shaped logger that prints nothing (the runs print thousands of lines otherwise). */
export function quietLogger(): NonNullable<DurableDispatcherOptions["logger"]> {
  const nothing = () => {};
  const logger = { debug: nothing, info: nothing, warn: nothing, error: nothing, createChild: () => logger };
  return logger as unknown as NonNullable<DurableDispatcherOptions["logger"]>;
}

/** A quiet logger that keeps the fields of every `error` line in `errors` (its children too). */
export function errorCollectingLogger(errors: unknown[]): NonNullable<DurableDispatcherOptions["logger"]> {
  const logger: Record<string, unknown> = {
    ...quietLogger(),
    error: (_message: string, fields: unknown) => errors.push(fields),
  };
  logger.createChild = () => logger;
  return logger as unknown as NonNullable<DurableDispatcherOptions["logger"]>;
}

/** A Powertools-shaped Metrics that publishes nothing. */
export function quietMetrics(): NonNullable<DurableDispatcherOptions["metrics"]> {
  const nothing = () => {};
  return {
    addMetric: nothing,
    addDimension: nothing,
    publishStoredMetrics: nothing,
  } as unknown as NonNullable<DurableDispatcherOptions["metrics"]>;
}

/** What a seeded history did. */
export interface History {
  orders: Order[];
  /** Executions started, in start order: the order and version each belongs to. */
  starts: Order[];
  /** The payloads of those executions, as Lambda got them. */
  payloads: string[];
  invokes: number;
  conflicts: string[];
  deliveries: number;
}

/**
 * Delivers every event of a few orders 1–3 times, shuffled, in batches invoked up to three at once; a failed record
 * comes back (receive count + 1) until acknowledged. The fake Lambda loses some responses after starting and fails
 * some Invokes before, so the guard sees failures between the start and its commit.
 */
export async function runHistory(
  seed: number,
  make: (lambda: FakeDurableLambda) => DurableDispatcherOptions,
): Promise<History> {
  const prng = createPrng(seed);
  const faults = prng.fork("faults");
  const lambda = new FakeDurableLambda({ delayMs: () => faults.int(0, 3) });
  const inner = lambda.send.bind(lambda);
  lambda.send = async (command) => {
    if (faults.chance(0.1)) throw Object.assign(new Error("socket hang up"), { name: "TimeoutError" });
    const out = await inner(command);
    if (faults.chance(0.15)) throw Object.assign(new Error("response lost"), { name: "TimeoutError" });
    return out;
  };
  const handler = durableSqsDispatcher(make(lambda));
  const orders = ordersOf(prng);
  let queue = shuffled(
    prng,
    orders.flatMap((o) => Array.from({ length: prng.int(1, 3) }, () => record(o, 1))),
  );
  let deliveries = 0;
  while (queue.length > 0) {
    const batches: SQSRecord[][] = [];
    for (let b = 0; b < 3 && queue.length > 0; b++) batches.push(queue.splice(0, prng.int(1, 4)));
    const answers = await Promise.all(
      batches.map((records) => handler(sqsEvent(...records), lambdaContext())),
    );
    deliveries += batches.flat().length;
    const failed = new Set(answers.flatMap((a) => a.batchItemFailures.map((f) => f.itemIdentifier)));
    const again = batches.flat().filter((r) => failed.has(r.messageId));
    queue = shuffled(prng, [
      ...queue,
      ...again.map((r) => record(order(r.body), receives(r) + 1, r.messageId)),
    ]);
  }
  const starts = lambda.started.map((s) => {
    const e = dispatchedExecution(JSON.parse(s.payload));
    return order(JSON.parse(s.payload).event.body) ?? { orderId: e.subject, version: -1 };
  });
  const payloads = lambda.started.map((s) => s.payload);
  return { orders, starts, payloads, invokes: lambda.invokes, conflicts: lambda.conflicts, deliveries };
}

/**
 * The properties: each event started at most once, no name conflict, and per order the starts go up by version, the
 * newest last. Returns the violations (empty when none).
 */
export function violations(h: History): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const last = new Map<string, number>();
  for (const s of h.starts) {
    const id = `${s.orderId}@${s.version}`;
    if (seen.has(id)) found.push(`${id} started twice`);
    seen.add(id);
    const before = last.get(s.orderId);
    if (before !== undefined && before >= s.version) found.push(`${id} started after version ${before}`);
    last.set(s.orderId, s.version);
  }
  for (const id of new Set(h.orders.map((o) => o.orderId))) {
    const newest = Math.max(...h.orders.filter((o) => o.orderId === id).map((o) => o.version));
    if (last.get(id) !== newest)
      found.push(`${id}: the last start is v${last.get(id)}, not the newest v${newest}`);
  }
  for (const c of h.conflicts) found.push(`name conflict for ${c}`);
  return found;
}

function ordersOf(prng: Prng): Order[] {
  const orders: Order[] = [];
  for (let o = 0; o < prng.int(2, 4); o++) {
    for (let v = 1; v <= prng.int(2, 4); v++) orders.push({ orderId: `order-${o}`, version: v });
  }
  return orders;
}

function record(o: Order, receiveCount: number, messageId?: string): SQSRecord {
  return sqsRecord(o, { receiveCount, ...(messageId ? { messageId } : {}) });
}

function receives(r: SQSRecord): number {
  return Number((r.attributes as unknown as Record<string, string>).ApproximateReceiveCount);
}

export function shuffled<T>(prng: Prng, items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = prng.int(0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
