import type { EventReport } from "../../lambda/invocation.js";

/**
 * What a hand-written handler (one that does not use the `effectively-once/lambda` wrappers, which report for
 * themselves) may return so that `eonce run` and the local runtime count each record's outcome: one entry per
 * record of the invocation, in record order. Without it, a run that succeeded is only `acknowledged`.
 *
 * ```ts
 * export const handler = async (event: S3Event): Promise<HandlerOutcomes> => ({
 *   outcomes: await Promise.all(event.Records.map(async (r) => ({ status: await handle(r) }))),
 * });
 * ```
 */
export interface HandlerOutcomes {
  outcomes: HandlerOutcome[];
}

/**
 * One record's outcome: a status of the outcome table (src/core/outcomes.ts), and optionally its subject, as the
 * wrappers report an event.
 */
export type HandlerOutcome = Pick<EventReport, "status" | "subject">;
