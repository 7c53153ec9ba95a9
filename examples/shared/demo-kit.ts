import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import type { ScenarioRunContext } from "../../src/cli/demo/scenario.js";
import type { StateStore } from "../../src/core/store.js";
import { createStateTable } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { scanTable } from "../../src/local/emulators/scan-table.js";
import { instrumentStore } from "../../src/sim/live/instrumented-store.js";

/** Helpers the three demo scenarios share: quiet observability, table scans, bounded parallel work. */

/** The wrappers' logs and EMF metrics would drown the demo's output; the demo counts from the stores. */
export function quietObservability(): { logger: Logger; metrics: Metrics } {
  const saved = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = "true";
  try {
    return { logger: new Logger({ logLevel: "SILENT" }), metrics: new Metrics({ namespace: "eonce-local" }) };
  } finally {
    if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
    else process.env.POWERTOOLS_METRICS_DISABLED = saved;
  }
}

/**
 * A guard state store for one run, traced by the runtime (timelines, frozen renewals): a DynamoDB table on the
 * runtime's DynamoDB Local, or the store `eonce demo --state-store` asked for (ctx.states).
 */
export async function localStateStore(
  ctx: Pick<ScenarioRunContext, "runtime" | "states">,
  tableName: string,
): Promise<StateStore> {
  const { runtime } = ctx;
  if (ctx.states) return instrumentStore(await ctx.states.open(runtime, tableName), runtime.trace);
  const client = runtime.dynamodbClient();
  await createStateTable(client, { tableName });
  return instrumentStore(new DynamoDBStore({ client, tableName }), runtime.trace);
}

/** Every item of a table (strongly consistent: the run is over, every write must be seen). */
export const scanAll = scanTable;

/** Runs `fn` over `items`, at most `limit` at once, in order of start. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Counts per key. */
export function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}
