import { randomUUID } from "node:crypto";
import { CreateQueueCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { type AnyLambdaHandler, LocalFunction } from "../../src/local/delivery/local-function.js";
import { SqsEventSource } from "../../src/local/delivery/sqs-event-source.js";
import { createSimulation } from "../../src/sim/live/simulation.js";
import { useLocalSqs } from "../kit/index.js";

const local = useLocalSqs();

/** A queue (with a DLQ after `maxReceiveCount` receives), a function and its event source; runs until drained. */
async function pipeline(
  handler: AnyLambdaHandler,
  options: { batchSize?: number; visibilityTimeoutS?: number; maxReceiveCount?: number; messages: number },
) {
  const name = `q-${randomUUID().slice(0, 8)}`;
  const dlq = await local.sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const queue = await local.sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutS ?? 1),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: local.server.queueArn(`${name}-dlq`),
          maxReceiveCount: options.maxReceiveCount ?? 5,
        }),
      },
    }),
  );
  const deps = createSimulation(1);
  const fn = new LocalFunction({ name: "consumer", handler, timeoutMs: 5000 }, deps);
  for (let i = 0; i < options.messages; i++) {
    await local.sqs.send(
      new SendMessageCommand({ QueueUrl: queue.QueueUrl, MessageBody: JSON.stringify({ n: i }) }),
    );
  }
  const source = new SqsEventSource(
    fn,
    {
      queueUrl: queue.QueueUrl ?? "",
      queueArn: local.server.queueArn(name),
      batchSize: options.batchSize ?? 10,
    },
    local.sqs,
    deps,
  );
  source.start();
  const deadline = Date.now() + 20_000;
  try {
    while (!(await source.drained())) {
      if (Date.now() > deadline) throw new Error("queue did not drain");
      await new Promise((r) => setTimeout(r, 50));
    }
    await deps.activity.idle();
  } finally {
    await source.stop();
    deps.sleeper.stop();
  }
  const { ApproximateNumberOfMessages } = await sqsDepth(dlq.QueueUrl ?? "");
  return { trace: deps.trace, dead: Number(ApproximateNumberOfMessages ?? 0) };
}

async function sqsDepth(url: string) {
  const { GetQueueAttributesCommand } = await import("@aws-sdk/client-sqs");
  const out = await local.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }),
  );
  return out.Attributes ?? {};
}

describe("SQS event source (Lambda's poller)", () => {
  it("delivers in batches of at most batchSize, in Lambda's SQS event shape", async () => {
    const batches: SQSEvent[] = [];
    await pipeline(
      async (event: SQSEvent) => {
        batches.push(event);
      },
      { batchSize: 3, messages: 7 },
    );
    expect(batches.every((b) => b.Records.length <= 3)).toBe(true);
    expect(batches.flatMap((b) => b.Records.map((r) => JSON.parse(r.body).n)).sort()).toEqual([
      0, 1, 2, 3, 4, 5, 6,
    ]);
    const r = batches[0]?.Records[0];
    expect(r).toMatchObject({ eventSource: "aws:sqs", attributes: { ApproximateReceiveCount: "1" } });
    expect(r?.eventSourceARN).toMatch(/^arn:aws:sqs:us-east-1:000000000000:q-/);
    expect(r?.receiptHandle).toBeTruthy();
  });

  it("redelivers only the messages reported in batchItemFailures, with ApproximateReceiveCount 2", async () => {
    const seen: { n: number; count: string }[] = [];
    await pipeline(
      async (event: SQSEvent): Promise<SQSBatchResponse> => {
        const failures = [];
        for (const r of event.Records) {
          const n = JSON.parse(r.body).n as number;
          seen.push({ n, count: r.attributes.ApproximateReceiveCount });
          if (n % 2 === 0 && r.attributes.ApproximateReceiveCount === "1")
            failures.push({ itemIdentifier: r.messageId });
        }
        return { batchItemFailures: failures };
      },
      { messages: 4 },
    );
    const again = seen
      .filter((s) => s.count === "2")
      .map((s) => s.n)
      .sort();
    expect(again).toEqual([0, 2]);
    expect(seen).toHaveLength(6);
  });

  it("fails the whole batch when the run throws, and dead-letters after maxReceiveCount", async () => {
    let runs = 0;
    const { dead } = await pipeline(
      async () => {
        runs++;
        throw new Error("always");
      },
      { messages: 2, maxReceiveCount: 2 },
    );
    expect(dead).toBe(2);
    expect(runs).toBeGreaterThanOrEqual(2);
  });

  it("redelivers a message whose processing outlives the visibility timeout (the naive duplicate)", async () => {
    const counts: string[] = [];
    await pipeline(
      async (event: SQSEvent) => {
        for (const r of event.Records) counts.push(r.attributes.ApproximateReceiveCount);
        if (counts.length === 1) await new Promise((r) => setTimeout(r, 1600));
      },
      { messages: 1, visibilityTimeoutS: 1 },
    );
    expect(counts).toEqual(["1", "2"]);
  });
});
