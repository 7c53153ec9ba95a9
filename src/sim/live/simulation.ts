import { createPrng, type Prng } from "../prng.js";
import { Activity } from "./activity.js";
import { Sleeper } from "./sleeper.js";
import { Trace } from "./trace.js";

/**
 * What every simulated part of the local AWS shares, passed as one argument: the trace it records into, the
 * activity count the runtime waits on, the sleeper that stop() cuts short, the seeded PRNG each part forks its
 * faults from, and the clock of its timestamps.
 */
export interface Simulation {
  readonly trace: Trace;
  readonly activity: Activity;
  readonly sleeper: Sleeper;
  readonly prng: Prng;
  readonly now: () => number;
}

/** A fresh simulation: the only place one is assembled (LocalRuntime makes one per runtime). */
export function createSimulation(seed = 1, now: () => number = Date.now): Simulation {
  return {
    trace: new Trace(),
    activity: new Activity(),
    sleeper: new Sleeper(),
    prng: createPrng(seed),
    now,
  };
}
