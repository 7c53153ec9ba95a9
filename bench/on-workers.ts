/**
 * Runs `op(worker, i)` for every `i < count` on `workers`, each one request at a time and taking the next `i` when its
 * last is done: concurrent clients (or Lambda instances, when each worker is one) over a queue of events. Resolves
 * when every `i` has run.
 */
export async function onWorkers<W>(
  workers: readonly W[],
  count: number,
  op: (worker: W, i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    workers.map(async (worker) => {
      while (next < count) await op(worker, next++);
    }),
  );
}

/** `n` interchangeable workers (sharing one client). */
export function workerIds(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
