/**
 * The outbox table's names (its shape: src/engines/dynamodb/outbox-schema.ts), the one place the DynamoDB outbox and
 * the CDK construct read them from. No imports: a CDK app loads this file without loading the AWS SDK.
 */
export const OUTBOX_ATTRIBUTES = {
  subject: "subject",
  order: "order",
  messageId: "messageId",
  destination: "destination",
  body: "body",
  groupId: "groupId",
  attributes: "attributes",
  createdAtMs: "createdAtMs",
  unsent: "unsent",
  pendingBucket: "pendingBucket",
  leaseOwner: "leaseOwner",
  leaseUntilMs: "leaseUntilMs",
  sentAtMs: "sentAtMs",
  expiresAt: "expiresAt",
} as const;

/** The sparse LSI: a subject's unsent entries in commit order (consistent reads: the head of a subject). */
export const OUTBOX_UNSENT_INDEX = "unsentBySubject";
/** The sparse GSI: every unsent entry, by bucket and age (which subjects have something to send). */
export const OUTBOX_PENDING_INDEX = "pending";
