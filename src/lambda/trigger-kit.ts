import type { DeliveryUnit, ResolvedParseOptions } from "../sources/types.js";
import type { DeriveKeys } from "./derive-keys.js";
import type {
  HeartbeatMessage,
  HeartbeatProblem,
  HeartbeatRun,
  ResolvedVisibilityHeartbeatOptions,
  SqsSender,
} from "./visibility-heartbeat-options.js";

/**
 * What a wrapper brings for its trigger: how it parses an invocation, and for SQS batches the visibility heartbeat.
 * Each wrapper names only its own, so that a bundle keeps only its trigger's parsers (`s3Handler`: s3-trigger.ts;
 * the others: any-trigger.ts).
 */
export interface TriggerKit {
  /**
   * The invocation's delivery units. Throws MalformedEventError for input that is no invocation this wrapper takes
   * (`what` names the wrapper in the message).
   */
  parse(input: unknown, options: ResolvedParseOptions, what: string): DeliveryUnit[];
  /** The guard keys of application messages and stream records. Absent: the kit's parser brings neither. */
  derive?: DeriveKeys;
  /** SQS batches: starts the heartbeat of these options. Absent: the kit's trigger brings no SQS batch. */
  heartbeat?: (
    options: ResolvedVisibilityHeartbeatOptions,
    client: SqsSenderSource | undefined,
  ) => HeartbeatStarter;
}

/** The heartbeat's client: one, or a function that makes one on first use. */
export type SqsSenderSource = SqsSender | (() => SqsSender | Promise<SqsSender>);

/** A visibility heartbeat, as the runner uses it. */
export interface HeartbeatStarter {
  start(messages: HeartbeatMessage[], onProblem?: (problem: HeartbeatProblem) => void): HeartbeatRun;
}
