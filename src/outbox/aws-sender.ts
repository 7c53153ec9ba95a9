import type { PutEventsCommandInput, PutEventsCommandOutput } from "@aws-sdk/client-eventbridge";
import type { PublishCommandInput } from "@aws-sdk/client-sns";
import type { SendMessageCommandInput } from "@aws-sdk/client-sqs";
import { custom, resolveOptions, schemaFor } from "../core/options.js";
import { eventBridgePutEventsInput, snsPublishInput, sqsSendMessageInput } from "./aws-requests.js";
import { EventBridgeEntryFailedError, OutboxEntryInvalidError, OutboxSendError } from "./errors.js";
import type { OutboxEntry, OutboxSender } from "./types.js";

/**
 * An AWS SDK v3 client as the sender uses it: `send` of one command (SQSClient, SNSClient, EventBridgeClient).
 * Structural, so that these declarations do not need the SNS and EventBridge clients installed.
 */
export interface AwsCommandClient {
  /** Sends one command; resolves with its output. */
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
  // `.catch` on the optional clients' imports: esbuild then leaves one that is not installed to fail at the first send
  // there, rather than failing the bundle of a handler that never sends to SNS or EventBridge.
  const sns = lazyClient(o.sns, "@aws-sdk/client-sns", async () => {
    const { SNSClient, PublishCommand } = await import("@aws-sdk/client-sns").catch(rethrow);
    return { make: () => new SNSClient({}), command: (i: PublishCommandInput) => new PublishCommand(i) };
  });
  const eventBridge = lazyClient(o.eventBridge, "@aws-sdk/client-eventbridge", async () => {
    const { EventBridgeClient, PutEventsCommand } = await import("@aws-sdk/client-eventbridge").catch(
      rethrow,
    );
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

function rethrow(error: unknown): never {
  throw error;
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
