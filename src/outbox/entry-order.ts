import type { OutboxEntry } from "./types.js";

/**
 * The order `pending()` lists entries in on every engine: by commit time, then by commit order within a subject
 * (`OutboxEntry.order`, whose string order is commit order).
 */
export function byCommitTime(
  a: Pick<OutboxEntry, "createdAtMs" | "order">,
  b: Pick<OutboxEntry, "createdAtMs" | "order">,
): number {
  return a.createdAtMs - b.createdAtMs || (a.order < b.order ? -1 : a.order > b.order ? 1 : 0);
}
