import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import type { KinesisRecordEvent } from "../../src/core/event.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { dynamodbStreamHandler, kinesisHandler, sqsHandler } from "../../src/lambda/index.js";
import {
  captureOutput,
  dynamodbRecord,
  kinesisRecord,
  lambdaContext,
  messages,
  streamEvent,
} from "../kit/index.js";

/**
 * The stream wrappers' `newestPerSubject` (only each subject's newest record of a batch runs, the older ones end
 * stale once it is acknowledged) and their default lanes at once (STREAM_CONCURRENCY).
 */

const uid = () => randomUUID().slice(0, 8);
type Step = { key: string; step: number; version?: number };
const stepOf = (e: KinesisRecordEvent) => e.json as Step;
const rec = (key: string, step: number, version?: number) =>
  kinesisRecord({ partitionKey: key, data: { key, step, version } });

describe("kinesisHandler newestPerSubject", () => {
  it("runs each subject's newest record only; the older ones end stale, logged and counted; a redelivery runs nothing", async () => {
    const [a, b, c] = [`a-${uid()}`, `b-${uid()}`, `c-${uid()}`];
    const records = [rec(a, 1), rec(b, 1), rec(a, 2), rec(c, 1), rec(b, 2), rec(a, 3)];
    const ran: string[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(`${stepOf(event).key}:${stepOf(event).step}`);
      },
      { store: new MemoryStore(), newestPerSubject: true },
    );
    const o = captureOutput();
    expect(await handler(streamEvent(...records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran.sort()).toEqual([`${a}:3`, `${b}:2`, `${c}:1`].sort());
    expect(o.metrics()).toMatchObject({ processed: 3, stale: 3 });
    const stale = o.logs().filter((l) => l.status === "stale");
    expect(stale.map((l) => l.sequenceNumber).sort()).toEqual(
      [records[0], records[1], records[2]].map((r) => r?.kinesis.sequenceNumber).sort(),
    );
    const s = (r: (typeof records)[number] | undefined) => `056${r?.kinesis.sequenceNumber}`;
    expect(messages(o)).toContain(`stale event skipped for ${a} (${s(records[0])} < ${s(records[5])})`);

    ran.length = 0;
    const o2 = captureOutput();
    expect(await handler(streamEvent(...records), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual([]);
    expect(o2.metrics()).toEqual({ duplicate: 3, stale: 3 });
  });

  it("the newest fails: its older records are not acknowledged either (the checkpoint is the oldest); other subjects go on", async () => {
    const [a, b] = [`a-${uid()}`, `b-${uid()}`];
    const records = [rec(b, 1), rec(a, 1), rec(a, 2), rec(b, 2), rec(a, 3)];
    const seqs = records.map((r) => r.kinesis.sequenceNumber);
    const ran: string[] = [];
    let failing = true;
    const handler = kinesisHandler(
      async (event) => {
        const { key, step } = stepOf(event);
        ran.push(`${key}:${step}`);
        if (failing && key === a) throw new Error("a fails");
      },
      { store: new MemoryStore(), newestPerSubject: true },
    );
    const o = captureOutput();
    // Lowest failed sequence number: a:1, older than the failed a:3; b's records before it are acknowledged.
    expect(await handler(streamEvent(...records), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: seqs[1] }],
    });
    expect(ran.sort()).toEqual([`${a}:3`, `${b}:2`].sort());
    expect(o.metrics()).toMatchObject({ processed: 1, stale: 1, failed: 1, deferred: 2 });
    expect(messages(o)).toContain(
      `deferred shardId-000000000000:${seqs[2]}: not processed: a newer record of its subject (${seqs[4]}) was not acknowledged in this batch`,
    );

    // Lambda resumes at a:1: a:3 runs, a:1 and a:2 end stale, b:2 is a duplicate.
    failing = false;
    ran.length = 0;
    const o2 = captureOutput();
    expect(await handler(streamEvent(...records.slice(1)), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(ran).toEqual([`${a}:3`]);
    expect(o2.metrics()).toMatchObject({ processed: 1, stale: 2, duplicate: 1 });
  });

  it("a user position: the greatest version runs wherever it is in the batch; an equal version is a duplicate", async () => {
    const key = `k-${uid()}`;
    const ran: number[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(stepOf(event).version ?? -1);
      },
      { store: new MemoryStore(), position: (e) => stepOf(e).version, newestPerSubject: true },
    );
    const o = captureOutput();
    const batch = [rec(key, 1, 2), rec(key, 2, 5), rec(key, 3, 3), rec(key, 4, 5)];
    expect(await handler(streamEvent(...batch), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual([5]);
    // The other v5 (a producer retry) goes through the guard: a duplicate of the committed v5, not stale (which would
    // claim that a newer event committed).
    expect(o.metrics()).toMatchObject({ processed: 1, duplicate: 1, stale: 2 });
  });

  it("a record without a position (the derivation gives none) keeps its lane in order, as without the option", async () => {
    const key = `k-${uid()}`;
    const ran: number[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(stepOf(event).step);
      },
      { store: new MemoryStore(), position: (e) => stepOf(e).version, newestPerSubject: true },
    );
    const batch = [rec(key, 1, 1), rec(key, 2), rec(key, 3, 2)];
    expect(await handler(streamEvent(...batch), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran).toEqual([1, 2, 3]);
  });

  it("a malformed record of a subject runs on its own and does not decide for the others", async () => {
    const key = `k-${uid()}`;
    const bad = rec(key, 9);
    bad.kinesis.data = "not base64!";
    const ran: number[] = [];
    const handler = kinesisHandler(
      async (event) => {
        ran.push(stepOf(event).step);
      },
      { store: new MemoryStore(), newestPerSubject: true },
    );
    const o = captureOutput();
    expect(await handler(streamEvent(rec(key, 1), rec(key, 2), bad), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(ran).toEqual([2]);
    expect(o.metrics()).toMatchObject({ processed: 1, stale: 1, malformed: 1 });
  });

  it("mode apply: the newest record's writes only", async () => {
    const key = `k-${uid()}`;
    const computed: number[] = [];
    const handler = kinesisHandler(
      (event) => {
        computed.push(stepOf(event).step);
        return stepOf(event).step;
      },
      { store: new MemoryStore(), mode: "apply", newestPerSubject: true },
    );
    const o = captureOutput();
    expect(await handler(streamEvent(rec(key, 1), rec(key, 2)), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(computed).toEqual([2]);
    expect(o.metrics()).toMatchObject({ processed: 1, stale: 1 });
  });

  it("is validated eagerly: a boolean, stream wrappers only, and not with identity alone (no order)", () => {
    const store = new MemoryStore();
    expect(() => kinesisHandler(async () => {}, { store, newestPerSubject: "yes" as never })).toThrow(
      OptionsError,
    );
    expect(() => sqsHandler(async () => {}, { store, newestPerSubject: true } as never)).toThrow(
      /newestPerSubject: for the stream wrappers only/,
    );
    expect(() =>
      kinesisHandler(async () => {}, { store, identity: (e) => e.partitionKey, newestPerSubject: true }),
    ).toThrow(/newestPerSubject needs positions/);
    expect(() =>
      kinesisHandler(async () => {}, {
        store,
        identity: (e) => e.partitionKey,
        position: (e) => e.sequenceNumber,
        newestPerSubject: true,
      }),
    ).not.toThrow();
  });
});

describe("dynamodbStreamHandler newestPerSubject", () => {
  it("each item's newest change runs; the older ones end stale", async () => {
    const item = (id: string) => ({ pk: { S: id } });
    const [x, y] = [`x-${uid()}`, `y-${uid()}`];
    const change = (id: string, n: string) =>
      dynamodbRecord({ eventName: "MODIFY", keys: item(id), newImage: { ...item(id), n: { N: n } } });
    const ran: string[] = [];
    const handler = dynamodbStreamHandler(
      async (event) => {
        ran.push(`${String(event.keys.pk)}:${event.newImage?.n}`);
      },
      { store: new MemoryStore(), newestPerSubject: true },
    );
    const o = captureOutput();
    const batch = [change(x, "1"), change(y, "1"), change(x, "2"), change(x, "3")];
    expect(await handler(streamEvent(...batch), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(ran.sort()).toEqual([`${x}:3`, `${y}:1`].sort());
    expect(o.metrics()).toMatchObject({ processed: 2, stale: 2 });
  });
});

describe("stream wrappers' default concurrency", () => {
  it("runs up to 100 subjects at once (a lane per subject), not the SQS default of 10", async () => {
    const subjects = 30;
    let inFlight = 0;
    let most = 0;
    let release: () => void = () => {};
    const all = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handler = kinesisHandler(
      async () => {
        inFlight++;
        most = Math.max(most, inFlight);
        if (inFlight === subjects) release();
        // With 10 lanes at once the 30th never starts: the wait ends at the timeout instead.
        await Promise.race([all, new Promise((r) => setTimeout(r, 300))]);
        inFlight--;
      },
      { store: new MemoryStore() },
    );
    const batch = Array.from({ length: subjects }, (_, i) => rec(`s${i}-${uid()}`, 1));
    expect(await handler(streamEvent(...batch), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(most).toBe(subjects);
  });
});
