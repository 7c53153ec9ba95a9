import { parseResolved } from "../sources/parse-invocation.js";
import { deriveKeys } from "./derive-keys.js";
import type { SqsSenderSource, TriggerKit } from "./trigger-kit.js";
import { type SqsSender, VisibilityHeartbeat } from "./visibility-heartbeat.js";

/**
 * The kit of every wrapper but `s3Handler` (and of Middy): every source's parser (the trigger check follows in
 * invocation.ts), the key derivations of messages and stream records, and the visibility heartbeat for SQS batches.
 */
export const ANY_TRIGGER: TriggerKit = {
  parse: (input, options) => parseResolved(input, options),
  derive: deriveKeys,
  heartbeat: (options, client: SqsSenderSource | undefined) =>
    new VisibilityHeartbeat(options, { client: client ?? defaultSqsClient }),
};

/** The SQS SDK is loaded when a heartbeat first extends a message, not at cold start. */
async function defaultSqsClient(): Promise<SqsSender> {
  const { SQSClient } = await import("@aws-sdk/client-sqs");
  return new SQSClient({});
}
