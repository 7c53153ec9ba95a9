import { createPrng } from "./prng.js";

/**
 * How a wrapper history (src/sim/wrapper-history.ts) drives the Lambda wrappers: SQS batches, FIFO or standard,
 * the runner's concurrency, and how often the user's handler throws. Drawn from the history's seed beside its
 * HistoryConfig (config.ts), so `--replay <seed> --wrappers` rebuilds both.
 */
export interface WrapperSettings extends BatchRunSettings {
  /** A FIFO queue: one message group per subject, a group's messages in order, none while one is in flight. */
  fifo: boolean;
}

/** How the wrapper runs a batch, in wrapper and stream histories alike. */
export interface BatchRunSettings {
  /** Most records per batch; each batch takes 1..maxBatch of those it may take (fewer while a stream bisects). */
  maxBatch: number;
  /** The wrapper's `concurrency` (lanes at once). */
  concurrency: number;
  /** Share of handler runs (either mode) that throw: an Error, or a retryable StoreError of the user's own store. */
  handlerErrorRate: number;
}

export function wrapperSettings(seed: number): WrapperSettings {
  const r = createPrng(seed).fork("wrappers");
  return {
    maxBatch: r.int(1, 4),
    fifo: r.chance(0.5),
    concurrency: r.int(1, 3),
    handlerErrorRate: r.pick([0, 0.1, 0.25]),
  };
}
