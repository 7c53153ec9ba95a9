import { randomUUID } from "node:crypto";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import type { Context } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { meterCapacity } from "../../bench/capacity.js";
import {
  inlineRecordsEventBridgeHandler,
  inlineRecordsHandler,
  inlineRecordsQueueHandler,
} from "../../examples/records/inline.js";
import { InlineDynamoDBStore } from "../../src/engines/dynamodb/inline-store.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { eventBridgeHandler, s3Handler, sqsHandler } from "../../src/lambda/index.js";
import { countRequests } from "../../src/observe/request-counter.js";
import {
  captureOutput,
  eventBridgeS3,
  lambdaContext,
  localDynamoDB,
  nextSequencer,
  pollOnce,
  s3Notification,
  s3Record,
  useLocalSqs,
} from "../kit/index.js";

/*
 * Inline state through the Lambda wrappers in mode `apply`: what each delivery costs, counted at the DynamoDB client
 * (requests per command, and write units from DynamoDB's ConsumedCapacity; DynamoDB Local reports none for a refused
 * write, which AWS bills at 1 WCU for a row under 1 KB: bench/capacity.ts adds it, kept apart as `estimatedWcu`).
 */
const client = localDynamoDB();
const requests = countRequests(client, "recordsInlineCounter");
const capacity = meterCapacity(client);
const local = useLocalSqs();
const suffix = randomUUID().slice(0, 8);
const recordsTable = `records-inline-${suffix}`;
const thumbsTable = `thumbs-inline-${suffix}`;
let queue: { url: string; arn: string };

beforeAll(async () => {
  await createTableIfMissing(client, recordsTable, "id");
  await createTableIfMissing(client, thumbsTable, "pk");
  const { QueueUrl } = await local.sqs.send(new CreateQueueCommand({ QueueName: `records-${suffix}` }));
  queue = { url: QueueUrl!, arn: local.server.queueArn(`records-${suffix}`) };
});
afterAll(() => client.destroy());

interface Cost {
  requests: Record<string, number>;
  wcu: number;
  rcu: number;
  estimatedWcu: number;
}

/** The DynamoDB requests and capacity one delivery costs. */
async function cost(deliver: () => Promise<unknown>): Promise<Cost> {
  requests.reset();
  capacity.reset();
  await deliver();
  return {
    requests: { ...requests.counts },
    wcu: capacity.wcu,
    rcu: capacity.rcu,
    estimatedWcu: capacity.estimatedWcu,
  };
}

type Lambda = (event: never, context: Context) => Promise<unknown>;

/** How each trigger delivers one S3 upload (`key`, `sequencer`) to a wrapped handler; fails the test if not acknowledged. */
const TRIGGERS: {
  name: string;
  deliver(handler: Lambda, key: string, sequencer: string): Promise<unknown>;
}[] = [
  {
    name: "S3 → Lambda (s3Handler)",
    deliver: (handler, key, sequencer) =>
      handler(s3Notification(s3Record({ key, sequencer })) as never, lambdaContext()),
  },
  {
    name: "S3 → SQS → Lambda (sqsHandler, through fauxqs)",
    async deliver(handler, key, sequencer) {
      const body = JSON.stringify(s3Notification(s3Record({ key, sequencer })));
      await local.sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }));
      const polled = await pollOnce(local.sqs, queue.url, queue.arn, handler as never);
      expect(polled.received).toHaveLength(1);
      expect(polled.failed).toEqual([]);
      return polled;
    },
  },
  {
    name: "S3 → EventBridge → Lambda (eventBridgeHandler)",
    deliver: (handler, key, sequencer) =>
      handler(eventBridgeS3({ key, sequencer }) as never, lambdaContext()),
  },
];

const ONE_WRITE = { requests: { UpdateItem: 1 }, wcu: 1, rcu: 0, estimatedWcu: 0 };
const ONE_REFUSED_WRITE = { requests: { UpdateItem: 1 }, wcu: 1, rcu: 0, estimatedWcu: 1 };

describe("records example with inline state (examples/records/inline.ts), mode apply", () => {
  const quiet = () => captureOutput(); // the wrappers' log lines and EMF, kept off the test output
  const handlers = () => {
    const config = { dynamodb: client, recordsTable };
    return [
      inlineRecordsHandler(config),
      inlineRecordsQueueHandler(config),
      inlineRecordsEventBridgeHandler(config),
    ] as Lambda[];
  };

  it.each(TRIGGERS.map((t, i) => [t.name, i] as const))(
    "%s: a new upload is 1 UpdateItem and 1 WCU, its duplicate notification 1 refused write; a re-upload is a row of its own",
    async (_name, i) => {
      quiet();
      const trigger = TRIGGERS[i]!;
      const handler = handlers()[i]!;
      const key = `photos/${randomUUID()}.jpg`;
      const [upload, reupload] = [nextSequencer(), nextSequencer()];
      expect(await cost(() => trigger.deliver(handler, key, upload))).toEqual(ONE_WRITE);
      expect(await cost(() => trigger.deliver(handler, key, upload))).toEqual(ONE_REFUSED_WRITE);
      expect(await cost(() => trigger.deliver(handler, key, reupload))).toEqual(ONE_WRITE);
      const rows =
        (await client.send(new ScanCommand({ TableName: recordsTable, ConsistentRead: true }))).Items ?? [];
      const mine = rows.filter((r) => r.filename?.S === key);
      expect(mine.map((r) => r.sequencer?.S).sort()).toEqual([upload, reupload].sort());
      expect(mine.every((r) => r.eo_st?.S === "done")).toBe(true);
    },
  );
});

describe("ordered inline rows through every wrapper, mode apply: the newest upload of a key wins", () => {
  const store = new InlineDynamoDBStore({ client, tableName: thumbsTable });
  const options = { store, mode: "apply" as const };
  const handlers: Lambda[] = [
    s3Handler((e, ctx) => {
      if (e.kind === "s3") ctx.atCommit(store.row(ctx, { thumb: `${e.key}@${e.sequencer}` }));
    }, options),
    sqsHandler((e, ctx) => {
      if (e.kind === "s3") ctx.atCommit(store.row(ctx, { thumb: `${e.key}@${e.sequencer}` }));
    }, options),
    eventBridgeHandler((e, ctx) => {
      if (e.kind === "s3") ctx.atCommit(store.row(ctx, { thumb: `${e.key}@${e.sequencer}` }));
    }, options),
  ] as Lambda[];

  it.each(TRIGGERS.map((t, i) => [t.name, i] as const))(
    "%s: new 1 request and 1 WCU; duplicate 1 request; an older upload arriving late (stale) 1 request",
    async (_name, i) => {
      captureOutput();
      const trigger = TRIGGERS[i]!;
      const key = `thumbs/${randomUUID()}.png`;
      const [older, newer] = [nextSequencer(), nextSequencer()];
      expect(await cost(() => trigger.deliver(handlers[i]!, key, newer))).toEqual(ONE_WRITE);
      expect(await cost(() => trigger.deliver(handlers[i]!, key, newer))).toEqual(ONE_REFUSED_WRITE);
      expect(await cost(() => trigger.deliver(handlers[i]!, key, older))).toEqual(ONE_REFUSED_WRITE);
    },
  );

  it("the same handler in mode run (claim, then commit with the row) costs a new upload 2 UpdateItems and 2 WCU", async () => {
    captureOutput();
    const run = s3Handler(
      async (e, ctx) => {
        if (e.kind === "s3") ctx.atCommit(store.row(ctx, { thumb: `${e.key}@${e.sequencer}` }));
      },
      { store },
    ) as Lambda;
    const key = `thumbs/${randomUUID()}.png`;
    const sequencer = nextSequencer();
    const deliver = TRIGGERS[0]!.deliver;
    expect(await cost(() => deliver(run, key, sequencer))).toEqual({
      requests: { UpdateItem: 2 },
      wcu: 2,
      rcu: 0,
      estimatedWcu: 0,
    });
    expect(await cost(() => deliver(run, key, sequencer))).toEqual(ONE_REFUSED_WRITE);
  });
});
