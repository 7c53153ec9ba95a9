import { afterStep, finishHistory, type HistoryDeps, type HistoryResult, setUp } from "./history.js";
import type { HistoryConfig } from "./history-config.js";
import type { StreamSettings } from "./stream-config.js";
import { createStreamWorker, streamWorkerLoop } from "./stream-delivery.js";
import { SimStream } from "./stream-source.js";

/**
 * A stream history (`npm run chaos -- --streams`): the same events, faults, stores and final checks as a guard
 * history (history.ts), but the events are put on a stream (stream-source.ts: shards, lanes, a split, a producer's
 * retried puts) in the order the producers' delays give, and every delivery goes through the real Kinesis wrapper
 * (src/lambda: the stream checkpoint, lanes by subject, batch item failures) in batches from each lane's checkpoint,
 * retried from the first failed record, bisected, redelivered after a lost checkpoint; each answer is checked
 * (stream-delivery.ts) before the checkpoint moves.
 */
export async function runStreamHistory(
  cfg: HistoryConfig,
  ss: StreamSettings,
  deps: HistoryDeps,
  broken: { checkpointPastFailures?: boolean } = {},
): Promise<HistoryResult> {
  const { run, beyondSkew, shared } = setUp(cfg, deps, { hostileKeys: false });
  // The queue's initial messages, in the order they became visible, are the producers' puts.
  const puts = run.source.messages
    .splice(0)
    .sort((a, b) => a.visibleAt - b.visibleAt || a.id - b.id)
    .map((m) => ({ event: m.event, partitionKey: run.events[m.event]?.subject ?? "" }));
  const splitAfter = ss.splitShare === undefined ? undefined : Math.floor(ss.splitShare * puts.length);
  const stream = new SimStream(
    run.source.dlq,
    run.sim,
    run.chooser,
    run.faults,
    { ...ss, ...broken, splitAfter, timeoutMs: cfg.source.visibilityMs },
    puts,
  );
  const workers = Array.from({ length: cfg.workers }, (_, id) => createStreamWorker(run, shared, id, ss));
  for (const w of workers) void streamWorkerLoop(run, stream, w, ss);
  const finished = await run.sim.run({
    maxSteps: cfg.maxSteps,
    maxVirtualMs: cfg.maxVirtualMs,
    afterStep: () => afterStep(run, deps.sampleEvery),
  });
  return finishHistory(run, beyondSkew, finished, workers.length);
}
