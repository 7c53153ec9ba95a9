import { randomUUID } from "node:crypto";
import type { Context, SQSBatchResponse } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import {
  type EffectivelyOnceOptions,
  type EventHandler,
  eventBridgeHandler,
  type InvocationReport,
  s3Handler,
  sendFifoMessage,
  sqsHandler,
} from "../../src/lambda/index.js";
import {
  captureOutput,
  dynamoTables,
  eventBridgeS3,
  lambdaContext,
  s3Record,
  sqsEvent,
  sqsRecord,
  type Tables,
} from "../kit/index.js";
import { deepJson, splice, spliceJson } from "../sources/hostile.js";

/** Input found by fuzzing, through the Lambda adapters: the bad record fails alone, on a defined route. */

type Wrapped = (event: unknown, context: Context) => Promise<unknown>;

/** 100,000 levels: far past what JSON.stringify (recursive) survives. */
const DEEP = deepJson(100_000);

let tables: Tables;

beforeAll(async () => {
  tables = await dynamoTables();
});

afterAll(() => tables?.close());

const uid = () => randomUUID().slice(0, 8);

describe("deeply nested input through the Lambda adapters", () => {
  it("SQS: a batch with one deeply nested sequencer fails only that message, which goes to the DLQ route", async () => {
    const o = captureOutput();
    const keys = [`a/${uid()}`, `b/${uid()}`];
    const deepBody = spliceJson(
      { Records: [s3Record({ key: `deep/${uid()}` })] },
      ["Records", 0, "s3", "object", "sequencer"],
      DEEP,
    );
    const event = sqsEvent(
      sqsRecord({ Records: [s3Record({ key: keys[0] as string })] }),
      sqsRecord(deepBody),
      sqsRecord({ Records: [s3Record({ key: keys[1] as string })] }),
    );
    const deepId = event.Records[1]?.messageId;
    const seen: string[] = [];
    // correlationAttribute "constructor" must not pick up Object.prototype.constructor either.
    const handler = sqsHandler(
      async (e) => {
        seen.push(e.kind === "s3" ? e.key : "?");
      },
      { store: tables.store, correlationAttribute: "constructor" },
    ) as Wrapped;

    const response = (await handler(event, lambdaContext())) as SQSBatchResponse;

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: deepId }] });
    expect(seen.sort()).toEqual([...keys].sort());
    const malformed = o.logs().filter((l) => String(l.message).startsWith("malformed message "));
    expect(malformed).toHaveLength(1);
    expect(malformed[0]).toMatchObject({ level: "ERROR", correlation_id: deepId });
    expect(String(malformed[0]?.message)).toMatch(/invalid S3 sequencer \[+…\]+: not a string/);
    expect(String(malformed[0]?.message).length).toBeLessThan(400);
    expect(o.metrics()).toMatchObject({ processed: 2, malformed: 1 });
  });

  it("direct S3: a record with a deeply nested eventSource is acknowledged and counted; the other is processed", async () => {
    const o = captureOutput();
    const good = `good/${uid()}`;
    const event = {
      Records: [s3Record({ key: good }), splice(s3Record({ key: `deep/${uid()}` }), ["eventSource"], DEEP)],
    };
    const seen: string[] = [];
    const handler = s3Handler(
      async (e) => {
        seen.push(e.kind === "s3" ? e.key : "?");
      },
      { store: tables.store },
    ) as Wrapped;

    const report = (await handler(event, lambdaContext())) as InvocationReport;

    expect(seen).toEqual([good]);
    expect(report.deliveries.map((d) => [d.ok, d.events[0]?.status])).toEqual([
      [true, "processed"],
      [true, "malformed"],
    ]);
    expect(o.metrics()).toMatchObject({ processed: 1, malformed: 1 });
  });

  it("direct EventBridge: an application message with a deeply nested detail is acknowledged as malformed", async () => {
    const o = captureOutput();
    const event = splice({ ...eventBridgeS3({ key: "k" }), source: "com.example.orders" }, ["detail"], DEEP);
    const calls: unknown[] = [];
    const handler = eventBridgeHandler(
      async (e) => {
        calls.push(e);
      },
      { store: tables.store, messages: "accept" },
    ) as Wrapped;

    const report = (await handler(event, lambdaContext())) as InvocationReport;

    expect(calls).toEqual([]);
    expect(report.deliveries.map((d) => [d.ok, d.events[0]?.status])).toEqual([[true, "malformed"]]);
    expect(o.metrics()).toMatchObject({ malformed: 1 });
  });
});

describe("a subject derivation that throws a value with no primitive conversion", () => {
  it("makes that message malformed (DLQ route), not the batch failed", async () => {
    const o = captureOutput();
    const event = sqsEvent(sqsRecord({ orderId: "ok" }), sqsRecord({ orderId: "odd" }));
    const oddId = event.Records[1]?.messageId;
    const bodies: string[] = [];
    const handler = sqsHandler(
      async (e) => {
        if (e.kind === "message") bodies.push(e.body);
      },
      {
        store: tables.store,
        messages: "accept",
        subject: (m) => {
          const { orderId } = JSON.parse(m.body) as { orderId: string };
          // String() of this throws TypeError: the message must still say something.
          if (orderId === "odd") throw Object.create(null);
          return `order-${orderId}-${uid()}`;
        },
      },
    ) as Wrapped;

    const response = (await handler(event, lambdaContext())) as SQSBatchResponse;

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: oddId }] });
    expect(bodies).toEqual(['{"orderId":"ok"}']);
    expect(o.logs().map((l) => String(l.message))).toContain(
      `malformed message ${oddId}: cannot derive the message's keys: {}`,
    );
  });
});

describe("option values with no primitive conversion", () => {
  const h: EventHandler = async () => {};
  const make = (options: Record<string, unknown>) => () =>
    sqsHandler(h, { store: tables.store, ...options } as EffectivelyOnceOptions);

  it.each([
    ["messages", { toString: 1 }],
    ["messages", Object.create(null)],
    ["concurrency", { toString: 1 }],
    ["orderS3Events", Object.create(null)],
    ["deadlineMarginMs", Object.create(null)],
    ["leaseMs", { valueOf: 1, toString: 1 }],
  ])("%s: %o is an OptionsError, not a TypeError", (name, value) => {
    expect(make({ [name]: value })).toThrow(OptionsError);
  });

  it("sendFifoMessage: a cyclic queueUrl is an OptionsError (JSON.stringify threw TypeError)", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const client = { send: async () => ({}) } as never;
    await expect(
      sendFifoMessage(client, { queueUrl: cyclic as never, subject: "s", identity: "i", body: "x" }),
    ).rejects.toThrow(OptionsError);
  });
});
