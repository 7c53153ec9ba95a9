import { randomUUID } from "node:crypto";
import middy from "@middy/core";
import type { Context } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MalformedEventError, OptionsError } from "../../src/core/errors.js";
import type { DynamoDBChangeEvent, KinesisRecordEvent } from "../../src/core/event.js";
import { stateKey } from "../../src/core/state-key.js";
import {
  dynamodbStreamHandler,
  type InvocationReport,
  kinesisHandler,
  type StreamBatchResponse,
  sqsHandler,
  wrapHandler,
} from "../../src/lambda/index.js";
import { eachEvent, effectivelyOnce } from "../../src/lambda/middy.js";
import {
  captureOutput,
  dynamodbRecord,
  dynamoTables,
  kinesisRecord,
  lambdaContext,
  messages,
  sqsEvent,
  sqsRecord,
  streamEvent,
  type Tables,
} from "../kit/index.js";

/** The stream wrappers on DynamoDB Local: Lambda's checkpoint, lanes by subject, duplicates, stale changes. */

let tables: Tables;

beforeAll(async () => {
  tables = await dynamoTables();
});

afterAll(() => tables?.close());

const uid = () => randomUUID().slice(0, 8);
type Order = { orderId: string; step: number; producerId?: string; version?: number };
const orderOf = (e: KinesisRecordEvent) => e.json as Order;

describe("kinesisHandler", () => {
  it("a failure mid-batch: the first failed sequence number is the checkpoint, the rest of its subject is not run, other subjects run", async () => {
    const o = captureOutput();
    const [a, b] = [`a-${uid()}`, `b-${uid()}`];
    const records = [
      kinesisRecord({ partitionKey: a, data: { orderId: a, step: 1 } }),
      kinesisRecord({ partitionKey: a, data: { orderId: a, step: 2 } }), // fails
      kinesisRecord({ partitionKey: b, data: { orderId: b, step: 1 } }), // fails too, later in the shard
      kinesisRecord({ partitionKey: b, data: { orderId: b, step: 2 } }),
      kinesisRecord({ partitionKey: a, data: { orderId: a, step: 3 } }),
      kinesisRecord({ partitionKey: `c-${uid()}`, data: { orderId: "c", step: 1 } }),
    ];
    const seqs = records.map((r) => r.kinesis.sequenceNumber);
    const ran: string[] = [];
    let failing = true;
    const handler = kinesisHandler(
      async (event) => {
        const { orderId, step } = orderOf(event);
        ran.push(`${orderId}:${step}`);
        if (failing && step === 2 && orderId === a) throw new Error("a:2 fails");
        if (failing && step === 1 && orderId === b) throw new Error("b:1 fails");
        return { step };
      },
      { store: tables.store, pipeline: "orders" },
    );
    const response = await handler(streamEvent(...records), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: seqs[1] }] });
    expect(ran.sort()).toEqual([`${a}:1`, `${a}:2`, `${b}:1`, "c:1"].sort());
    const deferred = o.logs().filter((l) => l.status === "deferred");
    expect(deferred.map((l) => l.sequenceNumber).sort()).toEqual([seqs[3], seqs[4]].sort());
    expect(messages(o)).toContain(
      `deferred shardId-000000000000:${seqs[4]}: not processed: an earlier record of ${a} failed in this batch (Lambda resumes the shard there)`,
    );
    expect(o.metrics()).toMatchObject({ processed: 2, failed: 2, deferred: 2 });

    // Lambda redelivers the shard from the checkpoint: what was processed is a duplicate, not run again.
    failing = false;
    ran.length = 0;
    const again = await handler(streamEvent(...records.slice(1)), lambdaContext());
    expect(again).toEqual({ batchItemFailures: [] });
    expect(ran.sort()).toEqual([`${a}:2`, `${a}:3`, `${b}:1`, `${b}:2`].sort());
    // The whole batch once more (a retry after a timeout): nothing runs. Each subject's newest record is its
    // committed one (a duplicate); its older records are below the committed position (stale).
    ran.length = 0;
    const o2 = captureOutput();
    expect(await handler(streamEvent(...records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual([]);
    expect(o2.metrics()).toEqual({ duplicate: 3, stale: 3 });
  });

  it("the default keys: subject the partition key, position the sequence number, an older record after a newer one is stale", async () => {
    const key = `k-${uid()}`;
    const older = kinesisRecord({ partitionKey: key, data: "x" });
    const newer = kinesisRecord({ partitionKey: key, data: "y" });
    const seen: string[] = [];
    const handler = kinesisHandler(
      async (_event, ctx) => {
        seen.push(`${ctx.subject}|${ctx.identity}|${ctx.position}`);
      },
      { store: tables.store },
    );
    await handler(streamEvent(newer), lambdaContext());
    const o = captureOutput();
    expect(await handler(streamEvent(older), lambdaContext())).toEqual({ batchItemFailures: [] });
    const n = newer.kinesis.sequenceNumber;
    expect(seen).toEqual([`${key}|n:${n}|056${n}`]);
    expect(o.metrics()).toMatchObject({ stale: 1 });
  });

  it("identity from the payload, no position: a producer retry (same producer id, new sequence number) is a duplicate", async () => {
    const orderId = `o-${uid()}`;
    const ran: number[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(Number(event.sequenceNumber.slice(-6)));
        return "charged";
      },
      { store: tables.store, identity: (e) => String(orderOf(e).producerId) },
    );
    const first = kinesisRecord({
      partitionKey: orderId,
      data: { orderId, step: 1, producerId: `p-${orderId}` },
    });
    const retry = kinesisRecord({
      partitionKey: orderId,
      data: { orderId, step: 1, producerId: `p-${orderId}` },
    });
    expect(BigInt(retry.kinesis.sequenceNumber) > BigInt(first.kinesis.sequenceNumber)).toBe(true);
    const o = captureOutput();
    expect(await handler(streamEvent(first, retry), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toHaveLength(1);
    expect(o.metrics()).toMatchObject({ processed: 1, duplicate: 1 });
    // Dedupe only: one state item per identity, not per partition key.
    expect(await tables.store.read(stateKey(orderId, `p-${orderId}`, false))).toMatchObject({
      status: "done",
    });
  });

  it("a version in the payload as position: the same version again is a duplicate, an older one stale", async () => {
    const orderId = `o-${uid()}`;
    const ran: number[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(orderOf(event).version ?? -1);
      },
      { store: tables.store, position: (e) => orderOf(e).version },
    );
    const v = (version: number) =>
      kinesisRecord({ partitionKey: orderId, data: { orderId, step: 1, version } });
    const o = captureOutput();
    await handler(streamEvent(v(2), v(2), v(1), v(3)), lambdaContext());
    expect(ran).toEqual([2, 3]);
    expect(o.metrics()).toMatchObject({ processed: 2, duplicate: 1, stale: 1 });
  });

  it("a malformed record is acknowledged and counted, and does not stop its batch", async () => {
    const o = captureOutput();
    const key = `k-${uid()}`;
    const bad = { ...kinesisRecord({ partitionKey: key, data: "x" }), eventID: "not-an-event-id" };
    const good = kinesisRecord({ partitionKey: key, data: "y" });
    const ran: string[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(event.sequenceNumber);
      },
      { store: tables.store },
    );
    expect(await handler(streamEvent(bad, good), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual([good.kinesis.sequenceNumber]);
    expect(
      messages(o).some((m) => m.startsWith("malformed record acknowledged without retry: expected shardId-")),
    ).toBe(true);
    expect(o.metrics()).toMatchObject({ processed: 1, malformed: 1 });
  });

  it("a subject derivation that throws makes that record malformed: acknowledged, not a blocked shard", async () => {
    const o = captureOutput();
    const handler = kinesisHandler(async () => "ok", {
      store: tables.store,
      subject: (e) => (orderOf(e) as Order).orderId.toString(),
    });
    const records = [
      kinesisRecord({ partitionKey: "p", data: "not json" }),
      kinesisRecord({ partitionKey: "p", data: { orderId: `o-${uid()}`, step: 1 } }),
    ];
    expect(await handler(streamEvent(...records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(o.metrics()).toMatchObject({ malformed: 1, processed: 1 });
  });

  it("busy after the policy is a failure: the checkpoint is that record", async () => {
    const key = `k-${uid()}`;
    const holder = kinesisRecord({ partitionKey: key, data: "older" });
    const later = kinesisRecord({ partitionKey: key, data: "newer" });
    // An older record of the key is running elsewhere (another invocation): claim it directly through the store.
    let release!: () => void;
    const running = new Promise<void>((r) => {
      release = r;
    });
    const slow = kinesisHandler(async () => running, { store: tables.store, leaseMs: 30_000 });
    const first = slow(streamEvent(holder), lambdaContext());
    await new Promise((r) => setTimeout(r, 300));
    const handler = kinesisHandler(async () => "ran", { store: tables.store, busy: "retry" });
    const response = await handler(streamEvent(later), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: later.kinesis.sequenceNumber }] });
    release();
    expect(await first).toEqual({ batchItemFailures: [] });
  });

  it("refuses a tumbling-window invocation, a batch of another trigger, and options of other triggers", async () => {
    const handler = kinesisHandler(async () => "ok", { store: tables.store });
    const windowed = {
      ...streamEvent(kinesisRecord({ partitionKey: "k", data: "x" })),
      window: { start: "2020-07-30T17:00:00Z", end: "2020-07-30T17:05:00Z" },
      state: {},
      isFinalInvokeForWindow: false,
    };
    await expect(handler(windowed as never, lambdaContext())).rejects.toThrow(
      /tumbling windows are not supported/,
    );
    await expect(handler(sqsEvent(sqsRecord("{}")) as never, lambdaContext())).rejects.toThrow(
      /kinesisHandler got an SQS batch; use sqsHandler/,
    );
    const ddb = streamEvent(dynamodbRecord({ eventName: "INSERT", keys: { pk: { S: "x" } } }));
    await expect(handler(ddb as never, lambdaContext())).rejects.toThrow(MalformedEventError);
    const sqs = sqsHandler(async () => "ok", { store: tables.store });
    await expect(
      sqs(streamEvent(kinesisRecord({ partitionKey: "k", data: "x" })) as never, lambdaContext()),
    ).rejects.toThrow(/sqsHandler got a Kinesis batch; use kinesisHandler/);
    expect(() =>
      kinesisHandler(async () => "ok", { store: tables.store, messages: "accept" } as never),
    ).toThrow(OptionsError);
    expect(() =>
      dynamodbStreamHandler(async () => "ok", { store: tables.store, visibilityHeartbeat: false } as never),
    ).toThrow(/visibilityHeartbeat: not for stream records/);
  });
});

describe("dynamodbStreamHandler", () => {
  const item = (id: string) => ({ pk: { S: id }, sk: { N: "1" } });

  it("an older change of an item after a newer one is stale; a redelivered one a duplicate", async () => {
    const id = `user-${uid()}`;
    const insert = dynamodbRecord({
      eventName: "INSERT",
      keys: item(id),
      newImage: { ...item(id), n: { N: "1" } },
    });
    const modify = dynamodbRecord({
      eventName: "MODIFY",
      keys: item(id),
      newImage: { ...item(id), n: { N: "2" } },
    });
    const seen: unknown[] = [];
    const handler = dynamodbStreamHandler(
      async (event, ctx) => {
        seen.push([event.eventName, event.newImage?.n, ctx.subject]);
        return event.eventName;
      },
      { store: tables.store },
    );
    await handler(streamEvent(modify), lambdaContext());
    const o = captureOutput();
    const report = await handler(streamEvent(insert, modify), lambdaContext());
    expect(report).toEqual({ batchItemFailures: [] });
    expect(seen).toEqual([["MODIFY", 2, `orders/{"pk":{"S":"${id}"},"sk":{"N":"1"}}`]]);
    expect(o.metrics()).toMatchObject({ stale: 1, duplicate: 1 });
  });

  it("a failure: the checkpoint is the first failed change; later changes of the item wait, other items run", async () => {
    const [x, y] = [`x-${uid()}`, `y-${uid()}`];
    const records = [
      dynamodbRecord({ eventName: "INSERT", keys: item(x) }),
      dynamodbRecord({ eventName: "INSERT", keys: item(y) }),
      dynamodbRecord({ eventName: "MODIFY", keys: item(x) }),
      dynamodbRecord({ eventName: "REMOVE", keys: item(y), ttl: true }),
    ];
    const ran: string[] = [];
    const handler = dynamodbStreamHandler(
      async (event) => {
        const id = String(event.keys.pk);
        ran.push(`${id}:${event.eventName}:${event.ttlExpired}`);
        if (id === x && event.eventName === "INSERT") throw new Error("x fails");
      },
      { store: tables.store },
    );
    const response = await handler(streamEvent(...records), lambdaContext());
    expect(response).toEqual({
      batchItemFailures: [{ itemIdentifier: records[0]?.dynamodb?.SequenceNumber }],
    });
    expect(ran.sort()).toEqual([`${x}:INSERT:false`, `${y}:INSERT:false`, `${y}:REMOVE:true`].sort());
  });

  it("mode apply folds the change's write into the commit: one row per item, newest change wins", async () => {
    const id = `user-${uid()}`;
    const subject = `orders/{"pk":{"S":"${id}"},"sk":{"N":"1"}}`;
    const change = (n: string) =>
      dynamodbRecord({ eventName: "MODIFY", keys: item(id), newImage: { ...item(id), n: { N: n } } });
    const [one, two] = [change("1"), change("2")];
    const handler = dynamodbStreamHandler(
      (event: DynamoDBChangeEvent, ctx) => {
        tables.sink.putAtCommit(ctx, { pk: ctx.subject, n: Number(event.newImage?.n) });
        return { n: event.newImage?.n };
      },
      { store: tables.store, mode: "apply" },
    );
    const o = captureOutput();
    expect(await handler(streamEvent(one, two), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler(streamEvent(one), lambdaContext())).toEqual({ batchItemFailures: [] });
    const committed = await tables.store.read(stateKey(subject, "", true));
    expect(await tables.sink.get(subject)).toMatchObject({ n: 2, srcFence: committed?.fence });
    expect(o.metrics()).toMatchObject({ processed: 2, stale: 1 });
  });
});

describe("wrapHandler and Middy take stream batches", () => {
  it("answer with the stream checkpoint", async () => {
    const key = `k-${uid()}`;
    const records = [
      kinesisRecord({ partitionKey: key, data: "a" }),
      kinesisRecord({ partitionKey: key, data: "b" }),
    ];
    const fail = (e: { kind: string; sequenceNumber?: string }) =>
      e.kind === "kinesis" && e.sequenceNumber === records[0]?.kinesis.sequenceNumber;
    const wrapped = wrapHandler(
      async (event) => {
        if (fail(event as never)) throw new Error("first fails");
      },
      { store: tables.store },
    );
    const viaMiddy = middy()
      .use(effectivelyOnce({ store: tables.store }))
      .handler(
        eachEvent(async (event) => {
          if (fail(event as never)) throw new Error("first fails");
        }),
      ) as unknown as (event: unknown, context: Context) => Promise<StreamBatchResponse | InvocationReport>;
    const expected = { batchItemFailures: [{ itemIdentifier: records[0]?.kinesis.sequenceNumber }] };
    expect(await wrapped(streamEvent(...records), lambdaContext())).toEqual(expected);
    expect(await viaMiddy(streamEvent(...records), lambdaContext())).toEqual(expected);
  });

  it("refuse a stream batch when their key derivations take application messages", async () => {
    const wrapped = wrapHandler(async () => "ok", {
      store: tables.store,
      messages: "accept",
      subject: (m) => JSON.parse(m.body).orderId,
    });
    await expect(
      wrapped(streamEvent(kinesisRecord({ partitionKey: "k", data: "x" })), lambdaContext()),
    ).rejects.toThrow(/take application messages; use kinesisHandler/);
  });
});
