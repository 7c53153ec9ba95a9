import { createHash } from "node:crypto";
import type { MessageAttributeValue, SendMessageCommandOutput, SQSClient } from "@aws-sdk/client-sqs";
import { OptionsError } from "../core/errors.js";
import { custom, required, resolveOptions, schemaFor, string } from "../core/options.js";

/**
 * Sending to an SQS FIFO queue with ids derived from the event: MessageGroupId from the subject (so the
 * events of one object or order stay in order, and different ones do not block each other), and
 * MessageDeduplicationId from subject and identity (so a producer retry within SQS's 5-minute window is
 * dropped). Both ids are limited to 128 characters of `[!-~]` (printable ASCII): a longer or other
 * value is replaced by `h:` + a SHA-256 (base64url), deterministic across producers.
 */
export const MAX_FIFO_ID_LENGTH = 128;
const VALID_ID = /^[!-~]{1,128}$/;

/**
 * A FIFO group or deduplication id: `value` as is when SQS accepts it (1–128 printable ASCII), else `h:` and
 * its SHA-256.
 */
export function fifoId(value: string): string {
  if (VALID_ID.test(value) && !value.startsWith("h:")) return value;
  return `h:${createHash("sha256").update(value, "utf8").digest("base64url")}`;
}

/** What a FIFO message's group and deduplication ids are made from. */
export interface FifoKeys {
  /** What order is scoped to: an S3 event's `bucket/key`, an order id. */
  subject: string;
  /** What makes two sends the same event, unique within the subject. */
  identity: string;
}

/**
 * The ids for one event. The dedup id covers subject and identity (an identity alone is only unique
 * within its subject); the length prefix keeps `("a:b","c")` and `("a","b:c")` apart.
 */
export function fifoMessageIds(keys: FifoKeys): { MessageGroupId: string; MessageDeduplicationId: string } {
  if (typeof keys?.subject !== "string" || keys.subject.length === 0) {
    throw new OptionsError("fifoMessageIds: subject must be a non-empty string");
  }
  if (typeof keys.identity !== "string" || keys.identity.length === 0) {
    throw new OptionsError("fifoMessageIds: identity must be a non-empty string");
  }
  return {
    MessageGroupId: fifoId(keys.subject),
    MessageDeduplicationId: fifoId(`${keys.subject.length}:${keys.subject}:${keys.identity}`),
  };
}

/** The input of `sendFifoMessage`. */
export interface SendFifoMessageInput extends FifoKeys {
  queueUrl: string;
  /** A string is sent as is; anything else as JSON. */
  body: unknown;
  messageAttributes?: Record<string, MessageAttributeValue>;
}

const SEND_FIFO_MESSAGE_INPUT = schemaFor<SendFifoMessageInput>()({
  queueUrl: required(string({ pattern: /\.fifo$/, expected: "a FIFO queue URL (.fifo)" })),
  body: required(custom<NonNullable<unknown>>("a string or a JSON value", (v) => v !== undefined)),
  subject: required(string()),
  identity: required(string()),
  messageAttributes: custom<Record<string, MessageAttributeValue>>(
    "SQS message attributes (an object)",
    (v) => typeof v === "object" && v !== null,
  ),
});

/** Sends one message with {@link fifoMessageIds}. A resend of the same event within 5 minutes is dropped by SQS. */
export async function sendFifoMessage(
  client: Pick<SQSClient, "send">,
  input: SendFifoMessageInput,
): Promise<SendMessageCommandOutput> {
  resolveOptions("sendFifoMessage", SEND_FIFO_MESSAGE_INPUT, input);
  const body = typeof input.body === "string" ? input.body : JSON.stringify(input.body);
  if (body === undefined) throw new OptionsError("sendFifoMessage: body is required");
  // Loaded here so that importing the lambda entry does not load the SQS SDK.
  const { SendMessageCommand } = await import("@aws-sdk/client-sqs");
  return client.send(
    new SendMessageCommand({
      QueueUrl: input.queueUrl,
      MessageBody: body,
      ...fifoMessageIds(input),
      ...(input.messageAttributes ? { MessageAttributes: input.messageAttributes } : {}),
    }),
  );
}
