import { randomUUID } from "node:crypto";
import { DescribeTableCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBStreamsClient } from "@aws-sdk/client-dynamodb-streams";
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  createOutboxTable,
  createStateTable,
  DynamoDBOutbox,
  DynamoDBStore,
  OUTBOX_ATTRIBUTES,
  outboxStreamHandler,
} from "../../../src/engines/dynamodb/index.js";
import { LOCAL_CREDENTIALS, LOCAL_REGION } from "../../../src/local/aws-local.js";
import { DynamoDBStreamReader } from "../../../src/local/delivery/dynamodb-stream-reader.js";
import { type AnyLambdaHandler, LocalFunction } from "../../../src/local/delivery/local-function.js";
import { StreamEventSource } from "../../../src/local/delivery/stream-event-source.js";
import type { OutboxEntry } from "../../../src/outbox/types.js";
import { createSimulation } from "../../../src/sim/live/simulation.js";
import { localDynamoDB } from "../../kit/dynamodb.js";

/*
 * The outbox's stream relay on DynamoDB Local's real stream, delivered as Lambda's event source mapping does
 * (src/local/delivery/stream-event-source.ts: batches, ReportBatchItemFailures, retries from the failed record).
 */

const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/orders" } as const;

/** Runs the stream through `handler` until every shard is drained. */
async function drain(streamArn: string, handler: AnyLambdaHandler): Promise<void> {
  const streams = new DynamoDBStreamsClient({
    endpoint: inject("dynamodbEndpoint"),
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const sim = createSimulation(11);
  const fn = new LocalFunction({ name: "outbox-relay", handler, timeoutMs: 10_000 }, sim);
  const source = new StreamEventSource(
    fn,
    new DynamoDBStreamReader(streams, streamArn),
    { pollIntervalMs: 10, batchSize: 5, maxRetryAttempts: -1 },
    sim,
  );
  source.start();
  const deadline = Date.now() + 30_000;
  try {
    while (!(await source.drained())) {
      if (Date.now() > deadline) throw new Error("stream did not drain");
      await new Promise((r) => setTimeout(r, 30));
    }
    await sim.activity.idle();
  } finally {
    await source.stop();
    sim.sleeper.stop();
    streams.destroy();
  }
}

describe("outboxStreamHandler on DynamoDB Local's stream", () => {
  const client = localDynamoDB();
  const suffix = randomUUID().slice(0, 8);
  const outboxTable = `outbox-stream-${suffix}`;
  const outbox = new DynamoDBOutbox({ client, tableName: outboxTable });
  const store = new DynamoDBStore({ client, tableName: `state-stream-${suffix}` });
  let streamArn = "";

  beforeAll(async () => {
    await createStateTable(client, { tableName: store.tableName });
    await createOutboxTable(client, { tableName: outboxTable });
    const d = await client.send(new DescribeTableCommand({ TableName: outboxTable }));
    streamArn = d.Table?.LatestStreamArn ?? "";
    expect(d.Table?.StreamSpecification?.StreamViewType).toBe("NEW_IMAGE");
  });
  afterAll(() => client.destroy());

  it("sends every committed entry, each subject's in order, a failed send again from its record, marking them sent", async () => {
    const guard = createGuard({ store, outbox });
    const subjects = ["a", "b", "c"].map((s) => `${s}-${suffix}`);
    const committed = new Map<string, string[]>(subjects.map((s) => [s, []]));
    for (let n = 1; n <= 3; n++) {
      for (const subject of subjects) {
        const r = await guard.run(
          { subject, identity: `e${n}`, position: positionFromNumber(n) },
          async (ctx) => {
            committed.get(subject)?.push(ctx.publish(QUEUE, { subject, n }), ctx.publish(QUEUE, `note ${n}`));
          },
        );
        expect(r.status).toBe("processed");
      }
    }
    // An INSERT that is not an entry (written by something else): acknowledged, counted, never blocking.
    await client.send(
      new PutItemCommand({
        TableName: outboxTable,
        Item: { [OUTBOX_ATTRIBUTES.subject]: { S: "junk" }, [OUTBOX_ATTRIBUTES.order]: { S: "no-order" } },
      }),
    );

    const sent: OutboxEntry[] = [];
    const failing = committed.get(subjects[1]!)![2]!; // b's second event's first message
    let failures = 0;
    const malformed: unknown[] = [];
    const relay = outboxStreamHandler({
      outbox,
      sender: {
        send: async (entry) => {
          if (entry.messageId === failing && failures++ === 0) throw new Error("destination down");
          sent.push(entry);
        },
      },
      onMalformed: (_, error) => malformed.push(error),
    });
    const answers: { event: DynamoDBStreamEvent; answer: DynamoDBBatchResponse }[] = [];
    await drain(streamArn, async (event: DynamoDBStreamEvent) => {
      const answer = await relay(event);
      answers.push({ event, answer });
      return answer;
    });

    // The failed send was answered as its record's batch item failure, and the batch retried from it.
    const failedAnswers = answers.filter((a) => a.answer.batchItemFailures.length > 0);
    expect(failedAnswers).toHaveLength(1);
    const { event, answer } = failedAnswers[0]!;
    const failedRecord = event.Records.find(
      (r) => r.dynamodb?.SequenceNumber === answer.batchItemFailures[0]?.itemIdentifier,
    );
    expect(failedRecord?.dynamodb?.NewImage?.[OUTBOX_ATTRIBUTES.messageId]?.S).toBe(failing);
    expect(failures).toBe(2);

    // Every committed message sent, under its id; duplicates (the retried batch's) only of the same ids.
    const all = [...committed.values()].flat();
    expect(new Set(sent.map((e) => e.messageId))).toEqual(new Set(all));
    expect(sent.every((e) => all.includes(e.messageId))).toBe(true);
    // Each subject's first sends in commit order, and never a later entry before an earlier one was sent.
    for (const subject of subjects) {
      const ids = sent.filter((e) => e.subject === subject).map((e) => e.messageId);
      const firsts = ids.filter((id, i) => ids.indexOf(id) === i);
      expect(firsts).toEqual(committed.get(subject));
    }
    expect(sent.find((e) => e.messageId === failing)).toMatchObject({
      subject: subjects[1],
      destination: QUEUE,
      body: JSON.stringify({ subject: subjects[1], n: 2 }),
      groupId: subjects[1],
    });
    expect(malformed).toHaveLength(1);
    expect(relay.counts.malformed).toBe(1);
    expect(relay.counts.ignored).toBeGreaterThan(0); // the marks' MODIFY records
    // Marked sent: nothing left for a polling relay.
    expect(await outbox.pending()).toEqual([]);
  });
});
