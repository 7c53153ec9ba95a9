import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 that delays every chunk, in both directions, by a one-way delay ± jitter: between the
 * bench's client and a local engine (DynamoDB Local, PostgreSQL), each request then pays a round trip as it would
 * to DynamoDB or RDS from a Lambda function, instead of a loopback's tens of microseconds.
 *
 * Order is kept per connection and direction: a chunk is written at max(arrival + delay, the previous chunk's
 * time), so jitter stretches a burst but never reorders it (TCP could not either). Timers fire on Node's
 * millisecond clock, a little late: `stats().lateMs` says by how much, so the report can quote the delay paid.
 */
export interface LatencyProxyOptions {
  /** Where the engine listens. */
  target: { host: string; port: number };
  /** Added to each chunk in each direction: a round trip costs twice this. */
  oneWayMs: number;
  /** Each chunk's delay is oneWayMs + a uniform draw in [−jitterMs, +jitterMs] (never below 0). Default 0. */
  jitterMs?: number;
  /** Source of the jitter draws (tests pass a seeded one). Default Math.random. */
  random?: () => number;
}

export interface LatencyProxyStats {
  connections: number;
  chunks: number;
  bytes: number;
  /** Mean of (written − due) over all chunks: how late the timers were. */
  lateMs: number;
}

export interface LatencyProxy {
  readonly host: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>`: a DynamoDB endpoint through the proxy. */
  readonly endpoint: string;
  stats(): LatencyProxyStats;
  close(): Promise<void>;
}

export async function startLatencyProxy(options: LatencyProxyOptions): Promise<LatencyProxy> {
  const jitter = options.jitterMs ?? 0;
  const random = options.random ?? Math.random;
  const delay = () => Math.max(0, options.oneWayMs + (jitter > 0 ? (2 * random() - 1) * jitter : 0));
  const totals = { connections: 0, chunks: 0, bytes: 0, lateSum: 0 };
  const sockets = new Set<Socket>();
  // Half-open allowed on both legs: an end is passed on after the data queued before it, not at once.
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    totals.connections++;
    const upstream = tcpConnect({ ...options.target, allowHalfOpen: true });
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    }
    // Either side failing ends the pair, as a broken link would.
    const fail = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", fail);
    upstream.on("error", fail);
    pipeDelayed(client, upstream, delay, totals);
    pipeDelayed(upstream, client, delay, totals);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    host: "127.0.0.1",
    port,
    endpoint: `http://127.0.0.1:${port}`,
    stats: () => ({
      connections: totals.connections,
      chunks: totals.chunks,
      bytes: totals.bytes,
      lateMs: totals.chunks ? totals.lateSum / totals.chunks : 0,
    }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Copies `from` to `to`, each chunk at its due time, in arrival order. One timer per direction at a time: the
 * queue is drained up to now, then the timer is set for the next due chunk. The end is passed on after the last
 * chunk, so a half-close is delayed like data.
 */
function pipeDelayed(
  from: Socket,
  to: Socket,
  delay: () => number,
  totals: { chunks: number; bytes: number; lateSum: number },
): void {
  const queue: { due: number; chunk: Buffer | null }[] = [];
  let lastDue = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && (queue[0]?.due ?? 0) <= now) {
      const { due, chunk } = queue.shift() as { due: number; chunk: Buffer | null };
      if (chunk === null) {
        to.end();
        continue;
      }
      totals.chunks++;
      totals.bytes += chunk.length;
      totals.lateSum += now - due;
      // Backpressure: a slow reader pauses the writer's source until it drains.
      if (!to.write(chunk)) {
        from.pause();
        to.once("drain", () => from.resume());
      }
    }
    const next = queue[0];
    if (next) timer = setTimeout(flush, Math.max(0, next.due - now));
  };
  const push = (chunk: Buffer | null) => {
    const due = Math.max(performance.now() + delay(), lastDue);
    lastDue = due;
    queue.push({ due, chunk });
    if (!timer) timer = setTimeout(flush, Math.max(0, due - performance.now()));
  };
  from.on("data", (chunk: Buffer) => push(chunk));
  from.on("end", () => push(null));
  // The receiving side is gone: nothing queued for it can be delivered.
  to.on("close", () => {
    clearTimeout(timer);
    queue.length = 0;
  });
}
