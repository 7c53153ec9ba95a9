import { createPrng } from "./prng.js";
import type { StreamOptions } from "./stream-source.js";
import type { BatchRunSettings } from "./wrapper-config.js";

/**
 * How a stream history (src/sim/stream-history.ts) reads its stream: shards, lanes (the parallelization factor), a
 * split mid-stream, batch sizes, bisect, the runner's concurrency, how often the user's handler throws and whether
 * only each subject's newest record of a batch runs (`newestPerSubject`). Drawn
 * from the history's seed beside its HistoryConfig, so `--replay <seed> --streams` rebuilds both.
 */
export interface StreamSettings extends Omit<StreamOptions, "timeoutMs" | "splitAfter">, BatchRunSettings {
  /** Split shard 0 after this share of the puts (none when undefined). */
  splitShare: number | undefined;
  /** The wrapper's `newestPerSubject`: each subject's newest record of a batch runs, the older ones end stale. */
  newestPerSubject: boolean;
}

export function streamSettings(seed: number): StreamSettings {
  const r = createPrng(seed).fork("streams");
  return {
    shards: r.int(1, 2),
    lanes: r.int(1, 2),
    splitShare: r.chance(0.5) ? r.next() : undefined,
    // As the construct's bounded retries: a record reaching it is a violation (I4), as SQS's DLQ is.
    maxAttempts: 30,
    bisect: r.chance(0.7),
    maxBatch: r.int(1, 5),
    concurrency: r.int(1, 3),
    handlerErrorRate: r.pick([0, 0.1, 0.25]),
    // Drawn last: the draws before it, and so a seed's other settings, are as they were before the option.
    newestPerSubject: r.chance(0.5),
  };
}
