import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import type { GuardOutcomeStatus } from "../../src/core/outcomes.js";
import type { BenchEvent } from "../events.js";

/** How the handler behaves on one delivery (the harness decides; the same plan for every implementation). */
export interface HandlerPlan {
  /** Simulated processing time before the effect (0: the effect only). */
  workMs: number;
  /** Throw before the effect's write (e.g. the input could not be read) or after it (e.g. a later step failed). */
  fail?: "before-effect" | "after-effect";
}

/** How a delivery ended: the guard's statuses (src/core/outcomes.ts); the baselines use the same words. */
export type DeliveryOutcome = GuardOutcomeStatus;

export interface DeliveryResult {
  outcome: DeliveryOutcome;
  /** false: the delivery failed and the source must redeliver it later. */
  ack: boolean;
}

export interface RunStats {
  handlerRuns: number;
  /** Handler runs per event version (to count runs of versions older than the newest). */
  runsByVersion: Map<number, number>;
  /** Time spent waiting or backing off inside the implementation (the harness adds redelivery delays). */
  waitMs: number;
}

export interface OpenContext {
  client: DynamoDBClient;
  /** Unique prefix for this run's tables. */
  prefix: string;
}

export interface Implementation {
  /** Key in the JSON report. */
  readonly name: string;
  readonly description: string;
  open(ctx: OpenContext): Promise<Instance>;
}

/** One implementation with fresh tables, for one measured run. */
export interface Instance {
  /** The table the effect writes to: one row per object key, `srcPos` = position of the version written. */
  readonly outputTable: string;
  readonly stats: RunStats;
  deliver(event: BenchEvent, plan: HandlerPlan): Promise<DeliveryResult>;
  /** Deletes the tables. */
  close(): Promise<void>;
}

export function newStats(): RunStats {
  return { handlerRuns: 0, runsByVersion: new Map(), waitMs: 0 };
}

/** Thrown by the simulated handler when its plan says so. */
export class PlannedFailure extends Error {
  override readonly name = "PlannedFailure";
}

/** An effect that returns this did not write (the conditional put found the row): the handler stops there. */
export const SKIPPED = Symbol("skipped");

export interface HandlerResult {
  key: string;
  version: number;
  skipped: boolean;
}

/** The user's handler: simulated work, then the effect, with the planned failure. The same for everyone. */
export async function runHandler(
  stats: RunStats,
  event: BenchEvent,
  plan: HandlerPlan,
  effect: () => unknown,
): Promise<HandlerResult> {
  stats.handlerRuns++;
  stats.runsByVersion.set(event.version, (stats.runsByVersion.get(event.version) ?? 0) + 1);
  if (plan.workMs > 0) await sleep(plan.workMs);
  if (plan.fail === "before-effect")
    throw new PlannedFailure(`planned failure before the effect of ${event.identity}`);
  const skipped = (await effect()) === SKIPPED;
  if (plan.fail === "after-effect" && !skipped) {
    throw new PlannedFailure(`planned failure after the effect of ${event.identity}`);
  }
  return { key: event.key, version: event.version, skipped };
}

/** The effect's row: one per object key. `eid` and `runId` make every applied write distinguishable. */
export function effectItem(event: BenchEvent): Record<string, string | number> {
  return {
    pk: event.subject,
    eid: event.identity,
    version: event.version,
    value: `thumbnail of ${event.key} v${event.version}`,
    runId: Math.random().toString(36).slice(2),
  };
}

/** The effect row as the unguarded handler and the baselines write it: the effect plus its source position. */
export function effectRow(event: BenchEvent): Record<string, AttributeValue> {
  return marshall({ ...effectItem(event), srcPos: event.position });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
