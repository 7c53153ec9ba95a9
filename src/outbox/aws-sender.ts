import type { PutEventsCommandInput, PutEventsCommandOutput } from "@aws-sdk/client-eventbridge";
import type { PublishCommandInput } from "@aws-sdk/client-sns";
import type { MessageAttributeValue, SendMessageCommandInput } from "@aws-sdk/client-sqs";
import { custom, resolveOptions, schemaFor } from "../core/options.js";
import { fifoId } from "../lambda/fifo-producer.js";
import { EventBridgeEntryFailedError, OutboxEntryInvalidError, OutboxSendError } from "./errors.js";
import { OUTBOX_MESSAGE_ID_ATTRIBUTE } from "./message-id.js";
import type { OutboxEntry, OutboxSender } from "./types.js";

/**
 * An AWS SDK v3 client as the sender uses it: `send` of one command (SQSClient, SNSClient, EventBridgeClient).
 * Structural, so that these declarations do not need the SNS and EventBridge clients installed.
 */
export interface AwsCommandClient {
  send(command: object): Promise<unknown>;
}

/** The options of `awsOutboxSender`: each client is created on first use (default config) when not given. */
export interface AwsOutboxSenderOptions {
  sqs?: AwsCommandClient;
  sns?: AwsCommandClient;
  eventBridge?: AwsCommandClient;
}

const isClient = (v: unknown) => typeof (v as AwsCommandClient)?.send === "function";
const AWS_OUTBOX_SENDER_OPTIONS = schemaFor<AwsOutboxSenderOptions>()({
  sqs: custom<AwsCommandClient>("an SQSClient", isClient),
  sns: custom<AwsCommandClient>("an SNSClient", isClient),
  eventBridge: custom<AwsCommandClient>("an EventBridgeClient", isClient),
});

/**
 * SQS and SNS take at most 10 message attributes (an SNS message over it is not delivered raw to SQS); the message
 * id takes one of them.
 */
const MAX_OUTBOX_ATTRIBUTES = 9;

/**
 * The sender for the outbox's AWS destinations: SQS SendMessage, SNS Publish and EventBridge PutEvents, each message
 * with its id (`eonceMessageId`: a message attribute, or a field of the event's detail). FIFO queues and topics get
 * the entry's group and its message id as deduplication id, so a resend within the 5-minute window is dropped. Each
 * SDK is loaded on its first send, so a user who never sends to SNS or EventBridge need not install its client.
 */
export function awsOutboxSender(options: AwsOutboxSenderOptions = {}): OutboxSender {
  const o = resolveOptions("awsOutboxSender", AWS_OUTBOX_SENDER_OPTIONS, options);
  const sqs = lazyClient(o.sqs, "@aws-sdk/client-sqs", async () => {
    const { SQSClient, SendMessageCommand } = await import("@aws-sdk/client-sqs");
    return {
      make: () => new SQSClient({}),
      command: (i: SendMessageCommandInput) => new SendMessageCommand(i),
    };
  });
  const sns = lazyClient(o.sns, "@aws-sdk/client-sns", async () => {
    const { SNSClient, PublishCommand } = await import("@aws-sdk/client-sns");
    return { make: () => new SNSClient({}), command: (i: PublishCommandInput) => new PublishCommand(i) };
  });
  const eventBridge = lazyClient(o.eventBridge, "@aws-sdk/client-eventbridge", async () => {
    const { EventBridgeClient, PutEventsCommand } = await import("@aws-sdk/client-eventbridge");
    return {
      make: () => new EventBridgeClient({}),
      command: (i: PutEventsCommandInput) => new PutEventsCommand(i),
    };
  });
  return {
    async send(entry) {
      switch (entry.destination.kind) {
        case "sqs":
          await sendWith(entry, sqs, sqsSendMessageInput(entry));
          return;
        case "sns":
          await sendWith(entry, sns, snsPublishInput(entry));
          return;
        case "eventbridge": {
          const out = (await sendWith(entry, eventBridge, eventBridgePutEventsInput(entry))) as
            | PutEventsCommandOutput
            | undefined;
          if ((out?.FailedEntryCount ?? 0) !== 0) {
            const failed = out?.Entries?.[0];
            throw new EventBridgeEntryFailedError(entry, failed?.ErrorCode, failed?.ErrorMessage);
          }
          return;
        }
        default:
          throw new OutboxEntryInvalidError(entry, "the destination's kind is not sqs, sns or eventbridge");
      }
    },
  };
}

/** SendMessage's input for an entry to an SQS queue. */
export function sqsSendMessageInput(entry: OutboxEntry): SendMessageCommandInput {
  if (entry.destination.kind !== "sqs") throw new OutboxEntryInvalidError(entry, "not an SQS destination");
  const { queueUrl } = entry.destination;
  return {
    QueueUrl: queueUrl,
    MessageBody: entry.body,
    MessageAttributes: messageAttributes(entry),
    ...fifoIds(entry, queueUrl),
  };
}

/** Publish's input for an entry to an SNS topic. */
export function snsPublishInput(entry: OutboxEntry): PublishCommandInput {
  if (entry.destination.kind !== "sns") throw new OutboxEntryInvalidError(entry, "not an SNS destination");
  const { topicArn } = entry.destination;
  return {
    TopicArn: topicArn,
    Message: entry.body,
    MessageAttributes: messageAttributes(entry),
    ...fifoIds(entry, topicArn),
  };
}

/**
 * PutEvents' input for an entry to an EventBridge bus: one event, its detail the body's object with the message id
 * added as `eonceMessageId` (EventBridge has no message attributes; the id replaces a field of that name).
 */
export function eventBridgePutEventsInput(entry: OutboxEntry): PutEventsCommandInput {
  const d = entry.destination;
  if (d.kind !== "eventbridge") throw new OutboxEntryInvalidError(entry, "not an EventBridge destination");
  const detail = jsonObject(entry);
  return {
    Entries: [
      {
        EventBusName: d.eventBusName,
        Source: d.source,
        DetailType: d.detailType,
        Detail: JSON.stringify({ ...detail, [OUTBOX_MESSAGE_ID_ATTRIBUTE]: entry.messageId }),
      },
    ],
  };
}

function jsonObject(entry: OutboxEntry): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(entry.body);
  } catch (cause) {
    throw new OutboxEntryInvalidError(
      entry,
      "an EventBridge message is a JSON object (its body is not JSON)",
      {
        cause,
      },
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new OutboxEntryInvalidError(entry, "an EventBridge message is a JSON object (the event's detail)");
  }
  return value as Record<string, unknown>;
}

function messageAttributes(entry: OutboxEntry): Record<string, MessageAttributeValue> {
  const given = Object.entries(entry.attributes ?? {});
  if (given.length > MAX_OUTBOX_ATTRIBUTES) {
    throw new OutboxEntryInvalidError(
      entry,
      `${given.length} attributes: SQS and SNS take ${MAX_OUTBOX_ATTRIBUTES} besides ${OUTBOX_MESSAGE_ID_ATTRIBUTE}`,
    );
  }
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of given) attributes[name] = { DataType: "String", StringValue: value };
  // Last, so that an attribute of the same name (publish refuses one) cannot replace the id.
  attributes[OUTBOX_MESSAGE_ID_ATTRIBUTE] = { DataType: "String", StringValue: entry.messageId };
  return attributes;
}

/** FIFO queues and topics (name ending `.fifo`): the entry's group, and its message id as deduplication id. */
function fifoIds(
  entry: OutboxEntry,
  queueOrTopic: string,
): { MessageGroupId?: string; MessageDeduplicationId?: string } {
  if (!queueOrTopic.endsWith(".fifo")) return {};
  return { MessageGroupId: fifoId(entry.groupId), MessageDeduplicationId: fifoId(entry.messageId) };
}

interface ServiceSdk<I> {
  make(): AwsCommandClient;
  command(input: I): object;
}

interface LazyClient<I> {
  (): Promise<{ client: AwsCommandClient; command(input: I): object }>;
  readonly pkg: string;
}

/** The client (given, or made on first use) and the command constructor, loaded once; a failed load is retried. */
function lazyClient<I>(
  given: AwsCommandClient | undefined,
  pkg: string,
  load: () => Promise<ServiceSdk<I>>,
): LazyClient<I> {
  let loaded: Promise<{ client: AwsCommandClient; command(input: I): object }> | undefined;
  const get = () => {
    loaded ??= load().then(
      (sdk) => ({ client: given ?? sdk.make(), command: sdk.command }),
      (error: unknown) => {
        loaded = undefined;
        throw error;
      },
    );
    return loaded;
  };
  return Object.assign(get, { pkg });
}

async function sendWith<I>(entry: OutboxEntry, lazy: LazyClient<I>, input: I): Promise<unknown> {
  let sdk: Awaited<ReturnType<LazyClient<I>>>;
  try {
    sdk = await lazy();
  } catch (cause) {
    throw new OutboxSendError(entry, `sending needs the npm package ${lazy.pkg}`, { cause });
  }
  try {
    return await sdk.client.send(sdk.command(input));
  } catch (cause) {
    throw new OutboxSendError(entry, errorText(cause), { cause });
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
