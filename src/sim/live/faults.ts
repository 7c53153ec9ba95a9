import { integer, optionsRule, resolveOptions, schemaFor } from "../../core/options.js";
import { isDuration, isShare, numberField } from "../../local/fields.js";
import type { Prng } from "../prng.js";

/**
 * Faults the local runtime injects, all seedable. Rates are shares in [0, 1], durations in ms.
 * Delivery faults act where the source hands an event over; run faults act on one Lambda invocation; invoke faults
 * act on the local Lambda Invoke endpoint, where a durable dispatcher starts its executions.
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
  /**
   * Share of Lambda Invoke requests to the local endpoint (a durable dispatcher's starts) that fail before the start
   * lands: a 500 `ServiceException`, nothing started (src/local/emulators/lambda-server.ts).
   */
  invokeFailRate?: number;
  /**
   * Share of Lambda Invoke requests to the local endpoint whose answer is lost after the start landed: the connection
   * drops, and the caller must send the Invoke again to learn its execution.
   */
  invokeLostRate?: number;
}

/** The fault options with their defaults (no fault) filled in. */
export type ResolvedFaults = Required<FaultOptions>;

const share = (doc: string) => numberField("a number in [0, 1]", isShare, { default: 0, doc });
const duration = (doc: string) => numberField("a non-negative number of ms", isDuration, { default: 0, doc });

/** The fault options, field by field; `doc` is the help line of the `eonce run` flag each one becomes. */
export const FAULT_OPTIONS = schemaFor<FaultOptions>()({
  duplicateRate: share("share of deliveries sent twice"),
  reorderWindowMs: duration("hold each delivery back by up to this long"),
  failBeforeRate: share("share of runs failing before the handler runs"),
  failAfterRate: share("share of runs failing after the handler returned"),
  slowRate: share("share of runs pausing --slow-ms at the handler's fault point"),
  slowMs: duration("length of a slow run's pause"),
  crashRate: share("share of runs crashing at the fault point"),
  faultyAttempts: integer({ min: 0, default: 1, doc: "faults hit only the first n attempts of a delivery" }),
  invokeFailRate: share("share of Lambda Invokes (durable starts) failing before the start"),
  invokeLostRate: share("share of Lambda Invokes (durable starts) losing their answer after it"),
});

/** Checks the fault options and fills in the defaults (`OptionsError` on a bad value). */
export function resolveFaults(options: FaultOptions | undefined): ResolvedFaults {
  const f = resolveOptions("faults", FAULT_OPTIONS, options ?? {});
  optionsRule(
    "faults",
    f.failBeforeRate + f.failAfterRate + f.crashRate <= 1,
    "failBeforeRate + failAfterRate + crashRate must not exceed 1",
  );
  optionsRule(
    "faults",
    f.invokeFailRate + f.invokeLostRate <= 1,
    "invokeFailRate + invokeLostRate must not exceed 1",
  );
  return f;
}

/** No fault at all. */
export const NO_FAULTS: ResolvedFaults = resolveFaults({});

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

/** A run without faults. */
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

  /** The faults of the next delivery: how many copies, each after its delay. */
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
