import type { Destination, OutboxEntry } from "../outbox/types.js";

/**
 * A row of a SQL engine's outbox table (PostgreSQL's and SQLite's have the same columns: message_id, subject,
 * order_key, destination and attributes as JSON text, body, group_id, created_at_ms) as the entry the commit wrote.
 */
export function outboxEntryOfRow(row: Record<string, unknown>): OutboxEntry {
  return {
    messageId: String(row.message_id),
    subject: String(row.subject),
    order: String(row.order_key),
    destination: JSON.parse(String(row.destination)) as Destination,
    body: String(row.body),
    groupId: String(row.group_id),
    ...(row.attributes == null
      ? {}
      : { attributes: JSON.parse(String(row.attributes)) as Record<string, string> }),
    createdAtMs: Number(row.created_at_ms),
  };
}
