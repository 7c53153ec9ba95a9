import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { Clock } from "../core/clock.js";
import { custom, integer, string } from "../core/options.js";

/** The options every engine's step effects take besides its own (the engine's client and table). */
export interface StepEffectsCommonOptions {
  /**
   * How long a step's marker is kept, in seconds (`expiresAt`: a TTL where the engine has one, a column to sweep
   * otherwise). Default 120 days: past the longest retention of a durable execution (90 days), so a step cannot apply
   * again while its execution can still run.
   */
  markerExpiresAfterSeconds?: number;
  /** The `pipeline` metric dimension and log field. Default as the Lambda wrappers: EONCE_PIPELINE, the function name. */
  pipeline?: string;
  logger?: Logger;
  metrics?: Metrics;
  /**
   * The clock of the steps' fences and marker times, and the randomness of their fences (`random`, default
   * Math.random): the guard's `Clock`. Default the system clock; the fault simulator gives virtual time and its seed.
   */
  clock?: Clock;
}

/** The schema fields of `StepEffectsCommonOptions`, spread into each engine's schema. */
export const STEP_EFFECTS_FIELDS = {
  markerExpiresAfterSeconds: integer({ min: 1, default: 120 * 24 * 3600 }),
  pipeline: string(),
  logger: custom<Logger>("a Powertools Logger instance", (v) => typeof v === "object" && v !== null),
  metrics: custom<Metrics>("a Powertools Metrics instance", (v) => typeof v === "object" && v !== null),
  clock: custom<Clock>("a Clock (now, sleep)", (v) => typeof (v as Clock | null)?.now === "function"),
};
