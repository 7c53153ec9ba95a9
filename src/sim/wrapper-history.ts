import { afterStep, finishHistory, type HistoryDeps, type HistoryResult, setUp } from "./history.js";
import type { HistoryConfig } from "./history-config.js";
import type { WrapperSettings } from "./wrapper-config.js";
import { createWrapperWorker, wrapperWorkerLoop } from "./wrapper-delivery.js";

/**
 * A wrapper history (`npm run chaos -- --wrappers`): the same events, queue, faults, stores and final checks as a
 * guard history (history.ts), but every delivery goes through the real SQS wrapper (src/lambda: InvocationRunner,
 * lanes, outcomes, batch item failures) in SQS batches, standard or FIFO, in mode `run` or `apply` per batch, the
 * user's handler throwing now and then; each record's answer is checked (wrapper-delivery.ts) before the queue
 * deletes or returns it.
 */
export async function runWrapperHistory(
  cfg: HistoryConfig,
  ws: WrapperSettings,
  deps: HistoryDeps,
): Promise<HistoryResult> {
  const { run, beyondSkew, shared } = setUp(cfg, deps, { hostileKeys: false });
  const workers = Array.from({ length: cfg.workers }, (_, id) => createWrapperWorker(run, shared, id, ws));
  for (const w of workers) void wrapperWorkerLoop(run, w, ws);
  const finished = await run.sim.run({
    maxSteps: cfg.maxSteps,
    maxVirtualMs: cfg.maxVirtualMs,
    afterStep: () => afterStep(run, deps.sampleEvery),
  });
  return finishHistory(run, beyondSkew, finished, workers.length);
}
