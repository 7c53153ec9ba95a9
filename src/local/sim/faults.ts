import { describeValue } from "../../core/describe-value.js";
import { OptionsError } from "../../core/errors.js";
import { rejectUnknownKeys } from "../../core/options.js";
import type { Prng } from "./prng.js";

/**
 * Faults the local runtime injects, all seedable. Rates are shares in [0, 1], durations in ms.
 * Delivery faults act where the source hands an event over; run faults act on one Lambda invocation.
 */
export interface FaultOptions {
  /** Share of deliveries the source sends twice (S3 retrying a notification, SQS delivering twice). */
  duplicateRate?: number;
  /** Every delivery is held back by a random delay in [0, reorderWindowMs], so later events can overtake. */
  reorderWindowMs?: number;
  /** Share of runs that fail before the handler runs (no effect happened). */
  failBeforeRate?: number;
  /** Share of runs that fail after the handler returned: the effect happened, the source still retries. */
  failAfterRate?: number;
  /** Share of runs that are slow: they pause `slowMs` at the handler's fault point (see faultPoint). */
  slowRate?: number;
  slowMs?: number;
  /**
   * Share of runs that crash at the fault point: the invocation fails at once and the rest of the handler
   * never runs, as when the process dies; a claim it holds is only freed by lease expiry.
   */
  crashRate?: number;
  /**
   * Run faults (fail, crash, slow) hit only the first `faultyAttempts` attempts of a delivery (async retry
   * number, or SQS ApproximateReceiveCount); later attempts run clean. Default 1: faults are transient, so
   * every event can still get through and anything lost is the pipeline's doing. Raise it to reach the DLQ.
   */
  faultyAttempts?: number;
}

export type ResolvedFaults = Required<FaultOptions>;

export const NO_FAULTS: ResolvedFaults = {
  duplicateRate: 0,
  reorderWindowMs: 0,
  failBeforeRate: 0,
  failAfterRate: 0,
  slowRate: 0,
  slowMs: 0,
  crashRate: 0,
  faultyAttempts: 1,
};

const RATES = ["duplicateRate", "failBeforeRate", "failAfterRate", "slowRate", "crashRate"] as const;
const DURATIONS = ["reorderWindowMs", "slowMs"] as const;

export function resolveFaults(options: FaultOptions | undefined): ResolvedFaults {
  if (options === undefined) return { ...NO_FAULTS };
  rejectUnknownKeys("faults", options, Object.keys(NO_FAULTS));
  const out: ResolvedFaults = { ...NO_FAULTS, ...options };
  for (const name of RATES) {
    const v = out[name];
    if (typeof v !== "number" || !(v >= 0 && v <= 1)) {
      throw new OptionsError(`faults: ${name} must be a number in [0, 1], got ${describeValue(v)}`);
    }
  }
  for (const name of DURATIONS) {
    const v = out[name];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new OptionsError(`faults: ${name} must be a non-negative number of ms, got ${describeValue(v)}`);
    }
  }
  if (!Number.isSafeInteger(out.faultyAttempts) || out.faultyAttempts < 0) {
    throw new OptionsError(
      `faults: faultyAttempts must be a non-negative integer, got ${describeValue(out.faultyAttempts)}`,
    );
  }
  if (out.failBeforeRate + out.failAfterRate + out.crashRate > 1) {
    throw new OptionsError("faults: failBeforeRate + failAfterRate + crashRate must not exceed 1");
  }
  return out;
}

/** What happens to one delivery: how many copies go out, each after its own delay. */
export interface DeliveryFaults {
  delaysMs: number[];
}

/** What happens to one run. At most one of fail-before, fail-after and crash. */
export interface RunFaults {
  failBefore: boolean;
  failAfter: boolean;
  crash: boolean;
  /** 0 when the run is not slow. */
  slowMs: number;
}

export const NO_RUN_FAULTS: RunFaults = { failBefore: false, failAfter: false, crash: false, slowMs: 0 };

/**
 * Draws fault decisions. Delivery and run decisions use separate streams, so that adding a duplicate
 * (one more run) does not change which deliveries are delayed.
 */
export class FaultInjector {
  readonly faults: ResolvedFaults;
  readonly #delivery: Prng;
  readonly #run: Prng;

  constructor(faults: FaultOptions | undefined, prng: Prng) {
    this.faults = resolveFaults(faults);
    this.#delivery = prng.fork("delivery");
    this.#run = prng.fork("run");
  }

  forDelivery(): DeliveryFaults {
    const f = this.faults;
    const copies = this.#delivery.chance(f.duplicateRate) ? 2 : 1;
    const delaysMs: number[] = [];
    for (let i = 0; i < copies; i++) delaysMs.push(Math.round(this.#delivery.next() * f.reorderWindowMs));
    return { delaysMs };
  }

  /** `attempt`: 1 for a first delivery; for a batch, its highest receive count. */
  forRun(attempt: number): RunFaults {
    const f = this.faults;
    if (attempt > f.faultyAttempts) {
      // Keep the stream aligned whether or not the faults apply.
      this.#run.next();
      this.#run.next();
      return { ...NO_RUN_FAULTS };
    }
    // One draw picks at most one failure mode; a second one decides slowness independently.
    const u = this.#run.next();
    const slow = this.#run.chance(f.slowRate);
    return {
      failBefore: u < f.failBeforeRate,
      failAfter: u >= f.failBeforeRate && u < f.failBeforeRate + f.failAfterRate,
      crash: u >= f.failBeforeRate + f.failAfterRate && u < f.failBeforeRate + f.failAfterRate + f.crashRate,
      slowMs: slow ? f.slowMs : 0,
    };
  }
}
