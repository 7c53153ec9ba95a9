import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { afterAll, beforeAll } from "vitest";
import { type LocalSqsServer, startSqsServer } from "../../src/local/emulators/sqs-server.js";
import { lambdaContext } from "./context.js";
import { lambdaEventOf } from "./events.js";

export interface LocalSqs {
  readonly server: LocalSqsServer;
  readonly sqs: SQSClient;
}

/**
 * A local SQS server (fauxqs, 127.0.0.1) and a client for the enclosing suite: started before its tests, stopped
 * after. The fields are set once the suite's beforeAll has run.
 */
export function useLocalSqs(): LocalSqs {
  const local = {} as { server: LocalSqsServer; sqs: SQSClient };
  beforeAll(async () => {
    local.server = await startSqsServer();
    local.sqs = local.server.client();
  });
  afterAll(async () => {
    local.sqs?.destroy();
    await local.server?.stop();
  });
  return local;
}

export type SqsLambda = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | unknown>;

export interface PollResult {
  received: Message[];
  failed: string[];
}

/**
 * One turn of a Lambda SQS event source poller against a real queue: receive a batch, invoke, delete
 * what succeeded (all of it unless reported in batchItemFailures; nothing if the function threw).
 */
export async function pollOnce(
  sqs: SQSClient,
  queueUrl: string,
  arn: string,
  handler: SqsLambda,
  options: { timeoutMs?: number; max?: number } = {},
): Promise<PollResult> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: options.max ?? 10,
      MessageSystemAttributeNames: ["All"],
      MessageAttributeNames: ["All"],
    }),
  );
  if (Messages.length === 0) return { received: [], failed: [] };
  let failed: string[];
  try {
    const context = lambdaContext(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    const response = (await handler(lambdaEventOf(Messages, arn), context)) as SQSBatchResponse;
    failed = (response?.batchItemFailures ?? []).map((f) => f.itemIdentifier);
  } catch {
    failed = Messages.map((m) => m.MessageId!);
  }
  const done = Messages.filter((m) => !failed.includes(m.MessageId!));
  if (done.length > 0) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: done.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return { received: Messages, failed };
}
