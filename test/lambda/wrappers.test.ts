import { randomUUID } from "node:crypto";
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import middy from "@middy/core";
import type { Context, SQSBatchResponse } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError } from "../../src/core/errors.js";
import type { MessageEvent } from "../../src/core/event.js";
import { positionFromNumber } from "../../src/core/position.js";
import { stateKey } from "../../src/core/state-key.js";
import {
  type ApplyEventHandler,
  DeliveryFailedError,
  type EffectivelyOnceApplyOptions,
  type EffectivelyOnceOptions,
  type EventHandler,
  eventBridgeHandler,
  type InvocationReport,
  LambdaDeadlineError,
  s3Handler,
  sqsHandler,
} from "../../src/lambda/index.js";
import { eachEvent, effectivelyOnce } from "../../src/lambda/middy.js";
import {
  captureOutput,
  dynamoTables,
  EXAMPLE_BUCKET,
  eventBridgeS3,
  lambdaContext,
  messages,
  nextSequencer,
  type PollResult,
  pollOnce,
  s3Notification,
  s3Record,
  s3TestEvent,
  sleep,
  snsEnvelope,
  sqsEvent,
  sqsRecord,
  type Tables,
  useLocalSqs,
  wrapStore,
} from "../kit/index.js";

type Trigger = "s3" | "sqs" | "eventbridge";
type Wrapped = (event: unknown, context: Context) => Promise<unknown>;

type ApplyOptions = Omit<EffectivelyOnceApplyOptions, "mode">;

/**
 * The two forms under test: every case below runs against both (the Middy one runs the same code path), in mode
 * `run` (`wrap`) and, further down, in mode `apply` (`wrapApply`).
 */
const FORMS: {
  name: string;
  wrap(trigger: Trigger, handler: EventHandler, options: EffectivelyOnceOptions): Wrapped;
  wrapApply(trigger: Trigger, compute: ApplyEventHandler, options: ApplyOptions): Wrapped;
}[] = [
  {
    name: "function",
    wrap: (trigger, handler, options) => {
      const make = trigger === "sqs" ? sqsHandler : trigger === "s3" ? s3Handler : eventBridgeHandler;
      return make(handler, options) as Wrapped;
    },
    wrapApply: (trigger, compute, options) => {
      const make = trigger === "sqs" ? sqsHandler : trigger === "s3" ? s3Handler : eventBridgeHandler;
      return make(compute, { ...options, mode: "apply" }) as Wrapped;
    },
  },
  {
    name: "middy",
    wrap: (_trigger, handler, options) =>
      middy().use(effectivelyOnce(options)).handler(eachEvent(handler)) as unknown as Wrapped,
    wrapApply: (_trigger, compute, options) =>
      middy()
        .use(effectivelyOnce({ ...options, mode: "apply" }))
        .handler(eachEvent(compute, { mode: "apply" })) as unknown as Wrapped,
  },
];

let tables: Tables;
const local = useLocalSqs();

beforeAll(async () => {
  tables = await dynamoTables();
});

afterAll(() => tables?.close());

const queueName = (arn: string) => arn.split(":").pop() as string;

async function createQueue(
  name: string,
  attributes: Record<string, string> = {},
): Promise<{ url: string; arn: string }> {
  const { QueueUrl } = await local.sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
  );
  return { url: QueueUrl!, arn: local.server.queueArn(name) };
}

const body = (m: MessageEvent) => JSON.parse(m.body) as { orderId: string; version: number; id?: string };

describe.each(FORMS)("$name form", (form) => {
  const uid = () => `${form.name}-${randomUUID().slice(0, 8)}`;

  it("a state store outage while the handler runs is never acknowledged: the message is retried", async () => {
    const o = captureOutput();
    // Renewals hang, then fail; the release fails too: nobody is known to hold the claim.
    const down = wrapStore(tables.store, {
      renew: async () => {
        await sleep(100);
        throw new StoreError("renew: network down (injected)");
      },
      release: async () => {
        throw new StoreError("release: network down (injected)");
      },
    });
    const handler = form.wrap(
      "sqs",
      async (_event, ctx) => {
        // A slow first claim (a cold client on a busy machine) can take longer than the lease: aborted already.
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
        );
      },
      { store: down, leaseMs: 300, heartbeatMs: 100, messages: "accept", subject: () => uid() },
    );
    const event = sqsEvent(sqsRecord({ orderId: uid() }, { messageId: "m-outage" }));
    const response = (await handler(event, lambdaContext())) as SQSBatchResponse;
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: "m-outage" }]);
    expect(o.metrics().leaseLost ?? 0).toBe(0);
    expect(o.metrics()).toMatchObject({ failed: 1 });
  });

  it("same S3 payload invoked twice: one effect, the second run logs 'duplicate skipped' and replays the result", async () => {
    const o = captureOutput();
    const key = `photos/${uid()} 1.jpg`;
    const subject = `${EXAMPLE_BUCKET}/${key}`;
    let calls = 0;
    const handler = form.wrap(
      "s3",
      async (event, ctx) => {
        calls++;
        if (event.kind !== "s3") throw new Error("expected an S3 event");
        ctx.logger.info("making a thumbnail");
        tables.sink.putAtCommit(ctx, { pk: event.subject, value: "thumb" });
        return { thumbnail: `${event.key}.png` };
      },
      { store: tables.store, pipeline: "thumbnails" },
    );
    const event = s3Notification(s3Record({ key, requestId: "REQ-DUP-1" }));

    const first = (await handler(event, lambdaContext())) as InvocationReport;
    const second = (await handler(structuredClone(event), lambdaContext())) as InvocationReport;

    expect(calls).toBe(1);
    expect(first.deliveries[0]?.events).toEqual([
      { status: "processed", subject, result: { thumbnail: `${key}.png` } },
    ]);
    expect(second.deliveries[0]?.events).toEqual([
      { status: "duplicate", subject, result: { thumbnail: `${key}.png` } },
    ]);
    const committed = await tables.store.read(stateKey(subject, "", true));
    expect(await tables.sink.get(subject)).toMatchObject({ value: "thumb", srcFence: committed?.fence });

    const lines = messages(o);
    expect(lines.filter((m) => m === `duplicate skipped for ${subject}`)).toHaveLength(1);
    expect(lines.filter((m) => m === `processed ${subject}`)).toHaveLength(1);
    // Every line, the user's own included, carries the S3 request id as correlation id.
    expect(lines).toContain("making a thumbnail");
    for (const line of o.logs()) expect(line.correlation_id).toBe("REQ-DUP-1");
    expect(o.metrics()).toMatchObject({ processed: 1, duplicate: 1 });
    expect(o.values("handlerDuration")).toHaveLength(1);
    for (const emf of o.emf()) expect(emf.pipeline).toBe("thumbnails");
  });

  it("orderS3Events: by default an older upload arriving late is stale; with false, every upload is processed once", async () => {
    const key = `uploads/${uid()}.csv`;
    const older = nextSequencer();
    const newer = nextSequencer();
    for (const orderS3Events of [true, false]) {
      const seen: string[] = [];
      const handler = form.wrap(
        "s3",
        async (event) => {
          if (event.kind === "s3") seen.push(event.sequencer ?? "");
        },
        { store: tables.store, pipeline: "records", orderS3Events },
      );
      const bucket = orderS3Events ? "ordered" : "unordered";
      const outcomes: string[] = [];
      for (const sequencer of [newer, older, older]) {
        const report = (await handler(
          s3Notification(s3Record({ bucket, key, sequencer })),
          lambdaContext(),
        )) as InvocationReport;
        outcomes.push(...(report.deliveries[0]?.events.map((e) => e.status) ?? []));
      }
      if (orderS3Events) {
        expect(outcomes).toEqual(["processed", "stale", "stale"]);
        expect(seen).toEqual([newer]);
      } else {
        expect(outcomes).toEqual(["processed", "processed", "duplicate"]);
        expect(seen).toEqual([newer, older]);
      }
    }
  });

  it("handler throws on the first attempt: claim released, the retry processes once", async () => {
    const o = captureOutput();
    const key = `docs/${uid()}.txt`;
    const subject = `${EXAMPLE_BUCKET}/${key}`;
    const seq = "00000000000000A1";
    const attempts: number[] = [];
    const handler = form.wrap(
      "s3",
      async (_event, ctx) => {
        attempts.push(ctx.attempt);
        if (attempts.length === 1) throw new Error("transient failure");
        tables.sink.putAtCommit(ctx, { pk: subject, value: "indexed" });
        return "ok";
      },
      { store: tables.store },
    );
    const event = s3Notification(s3Record({ key, sequencer: seq }));

    const error = await handler(event, lambdaContext()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryFailedError);
    expect((error as DeliveryFailedError).failures).toEqual([
      expect.objectContaining({ recordIndex: 0, status: "failed" }),
    ]);
    const k = stateKey(subject, "", true);
    const released = await tables.store.read(k);
    expect(released).toMatchObject({ status: "released" });
    expect(await tables.sink.get(subject)).toBeUndefined();

    const retry = (await handler(event, lambdaContext())) as InvocationReport;
    expect(retry.deliveries[0]?.events[0]?.status).toBe("processed");
    const again = (await handler(event, lambdaContext())) as InvocationReport;
    expect(again.deliveries[0]?.events[0]?.status).toBe("duplicate");

    expect(attempts).toEqual([1, 2]);
    const done = await tables.store.read(k);
    expect(done).toMatchObject({ status: "done" });
    expect(done?.fence).toBeGreaterThan(released?.fence ?? Number.POSITIVE_INFINITY);
    expect(await tables.sink.get(subject)).toMatchObject({ value: "indexed", srcFence: done?.fence });
    expect(
      messages(o).filter((m) => m.startsWith(`handler failed for ${subject}; claim released`)),
    ).toHaveLength(1);
    expect(o.metrics()).toMatchObject({ failed: 1, processed: 1, duplicate: 1 });
  });

  it("a direct S3 record that is malformed is acknowledged and counted, not retried", async () => {
    const o = captureOutput();
    const good = `ok/${uid()}`;
    const event = s3Notification(
      s3Record({ key: good }),
      s3Record({ key: `bad/${uid()}`, sequencer: "NOT-HEX" }),
    );
    const seen: string[] = [];
    const handler = form.wrap(
      "s3",
      async (e) => {
        seen.push(e.kind === "s3" ? e.key : "?");
      },
      { store: tables.store },
    );
    const report = (await handler(event, lambdaContext())) as InvocationReport;
    expect(seen).toEqual([good]);
    expect(report.deliveries.map((d) => [d.ok, d.events[0]?.status])).toEqual([
      [true, "processed"],
      [true, "malformed"],
    ]);
    const errors = o.logs().filter((l) => l.level === "ERROR");
    expect(errors).toHaveLength(1);
    expect(String(errors[0]?.message)).toMatch(
      /^malformed record acknowledged without retry: invalid S3 sequencer/,
    );
    expect(errors[0]?.correlation_id).toEqual(expect.any(String));
    expect(o.metrics()).toMatchObject({ processed: 1, malformed: 1 });
  });

  it("SQS batch with s3:TestEvent and garbage: good records succeed, the report lists exactly the bad ones, which reach the DLQ", async () => {
    const o = captureOutput();
    const name = `garbage-${uid()}`;
    const dlq = await createQueue(`${name}-dlq`);
    const q = await createQueue(name, {
      VisibilityTimeout: "1",
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }),
    });
    const bodies: Record<string, string> = {
      test: JSON.stringify(s3TestEvent()),
      notJson: "{not json",
      good1: JSON.stringify({ Records: [s3Record({ key: `in/${uid()}` })] }),
      badSequencer: JSON.stringify({ Records: [s3Record({ key: `in/${uid()}`, sequencer: "XYZ" })] }),
      foreign: JSON.stringify({ orderId: 1 }),
      good2: JSON.stringify({ Records: [s3Record({ key: `in/${uid()}` })] }),
    };
    const ids: Record<string, string> = {};
    for (const [label, b] of Object.entries(bodies)) {
      const sent = await local.sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: b }));
      ids[label] = sent.MessageId!;
    }
    const processed: string[] = [];
    const handler = form.wrap(
      "sqs",
      async (e) => {
        processed.push(e.kind === "s3" ? e.key : "?");
      },
      { store: tables.store, pipeline: "garbage" },
    );
    const bad = [ids.notJson, ids.badSequencer, ids.foreign].sort();

    const first = await pollOnce(local.sqs, q.url, q.arn, handler);
    expect(first.received).toHaveLength(6);
    expect([...first.failed].sort()).toEqual(bad);
    expect(processed).toHaveLength(2);
    const malformedLines = o.logs().filter((l) => String(l.message).startsWith("malformed message "));
    expect(malformedLines.map((l) => l.messageId).sort()).toEqual(bad);
    for (const l of malformedLines) {
      expect(l).toMatchObject({ level: "ERROR", receiveCount: 1, correlation_id: l.messageId });
      expect(String(l.hint)).toContain("dead-letters it after maxReceiveCount");
    }
    expect(messages(o)).toContain(`s3:TestEvent acknowledged for bucket ${EXAMPLE_BUCKET}`);
    expect(o.metrics()).toMatchObject({ testEvent: 1, malformed: 3, processed: 2 });
    expect(o.values("receiveCount")).toEqual([1, 1, 1, 1, 1, 1]);

    // Redelivered after the visibility timeout: logged once per receive, with the receive count.
    o.clear();
    await sleep(1_100);
    const second = await pollOnce(local.sqs, q.url, q.arn, handler);
    expect(second.received.map((m) => m.MessageId).sort()).toEqual(bad);
    expect([...second.failed].sort()).toEqual(bad);
    expect(
      o
        .logs()
        .filter((l) => String(l.message).startsWith("malformed message "))
        .map((l) => l.receiveCount),
    ).toEqual([2, 2, 2]);
    expect(o.values("receiveCount")).toEqual([2, 2, 2]);

    // The third receive exceeds maxReceiveCount: the queue moves them to the DLQ; nothing loops.
    await sleep(1_100);
    expect((await pollOnce(local.sqs, q.url, q.arn, handler)).received).toEqual([]);
    const dead = await local.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dlq.url, MaxNumberOfMessages: 10 }),
    );
    expect((dead.Messages ?? []).map((m) => m.MessageId).sort()).toEqual(bad);
    expect(processed).toHaveLength(2);
  });

  it("FIFO: a failure in group A fails A's later records only; B succeeds; order within A preserved", async () => {
    const o = captureOutput();
    const arn = "arn:aws:sqs:us-east-1:000000000000:orders.fifo";
    const run = uid();
    const record = (group: string, n: number) =>
      sqsRecord(
        { orderId: `${run}-${group}${n}`, group, n },
        { groupId: group, eventSourceARN: arn, messageId: `${group}${n}-${run}` },
      );
    const event = sqsEvent(
      record("A", 1),
      record("B", 1),
      record("A", 2),
      record("B", 2),
      record("A", 3),
      record("B", 3),
    );
    const started: string[] = [];
    const finished: string[] = [];
    // A1 holds its group until all of B finished (or 5 s pass, if B were waiting behind A): no race with the clock.
    let bFinished!: () => void;
    const allOfB = new Promise<void>((resolve) => {
      bFinished = resolve;
    });
    const handler = form.wrap(
      "sqs",
      async (e) => {
        const { group, n } = JSON.parse((e as MessageEvent).body) as { group: string; n: number };
        started.push(`${group}${n}`);
        if (group === "A" && n === 1) await Promise.race([allOfB, sleep(5_000)]);
        if (group === "A" && n === 2) throw new Error("A2 cannot be processed");
        finished.push(`${group}${n}`);
        if (group === "B" && n === 3) bFinished();
      },
      { store: tables.store, messages: "accept", subject: (m) => body(m).orderId },
    );
    const response = (await handler(event, lambdaContext())) as SQSBatchResponse;

    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([`A2-${run}`, `A3-${run}`]);
    expect(started.filter((s) => s.startsWith("A"))).toEqual(["A1", "A2"]);
    expect(started.filter((s) => s.startsWith("B"))).toEqual(["B1", "B2", "B3"]);
    // B did not wait for A: all of B finished while A1 was still running.
    expect(finished.indexOf("B3")).toBeLessThan(finished.indexOf("A1"));
    const deferred = o.logs().filter((l) => String(l.message).startsWith("deferred "));
    expect(deferred).toHaveLength(1);
    expect(deferred[0]).toMatchObject({
      messageId: `A3-${run}`,
      correlation_id: `A3-${run}`,
      messageGroupId: "A",
    });
    expect(o.metrics()).toMatchObject({ processed: 4, failed: 1, deferred: 1 });
  });

  describe("FIFO: a record whose SQS metadata is broken", () => {
    const arn = "arn:aws:sqs:us-east-1:000000000000:orders.fifo";
    const fifoBatch = (run: string, records: [string, string][]) =>
      sqsEvent(
        ...records.map(([group, name]) =>
          sqsRecord(
            { orderId: `${run}-${name}`, name },
            { groupId: group, eventSourceARN: arn, messageId: `${name}-${run}` },
          ),
        ),
      );
    const recordingHandler = (ran: string[]) =>
      form.wrap(
        "sqs",
        async (e) => {
          ran.push((JSON.parse((e as MessageEvent).body) as { name: string }).name);
        },
        { store: tables.store, messages: "accept", subject: (m) => body(m).orderId },
      );

    it("without a receipt handle keeps its group: the group's later records are deferred, never run", async () => {
      const o = captureOutput();
      const run = uid();
      const event = fifoBatch(run, [
        ["G", "m1"],
        ["G", "m2"],
        ["G", "m3"],
      ]);
      (event.Records[1] as { receiptHandle?: string }).receiptHandle = undefined;
      const ran: string[] = [];
      const response = (await recordingHandler(ran)(event, lambdaContext())) as SQSBatchResponse;
      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([`m2-${run}`, `m3-${run}`]);
      expect(ran).toEqual(["m1"]);
      expect(messages(o).filter((m) => m.startsWith("deferred "))).toEqual([
        `deferred m3-${run}: not processed: an earlier message of group G failed in this batch`,
      ]);
      expect(o.metrics()).toMatchObject({ processed: 1, malformed: 1, deferred: 1 });
    });

    it("whose group cannot be read fails every FIFO record after it, of any group; earlier ones run", async () => {
      const o = captureOutput();
      const run = uid();
      const event = fifoBatch(run, [
        ["H", "h1"],
        ["G", "m1"],
        ["G", "m2"],
        ["G", "m3"],
        ["H", "h2"],
      ]);
      const broken = event.Records[2] as { receiptHandle?: string; attributes?: unknown };
      broken.receiptHandle = undefined;
      broken.attributes = "not an object"; // no group to read
      const ran: string[] = [];
      const response = (await recordingHandler(ran)(event, lambdaContext())) as SQSBatchResponse;
      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([
        `m2-${run}`,
        `m3-${run}`,
        `h2-${run}`,
      ]);
      expect(ran.sort()).toEqual(["h1", "m1"]);
      const deferred = messages(o).filter((m) => m.startsWith("deferred "));
      expect(deferred).toHaveLength(2);
      for (const line of deferred) {
        expect(line).toContain(
          `m2-${run}, earlier in this FIFO batch, failed with no readable message group`,
        );
      }
      expect(o.metrics()).toMatchObject({ processed: 2, malformed: 1, deferred: 2 });
    });
  });

  // These two wait on SQS's real clock (2 s visibility timeouts), each on its own queue and pipeline: side by side,
  // each counting its own pipeline's lines. (The batch test below beside them changed when the second receive of the
  // heartbeat-off case came: it runs after them.)
  for (const heartbeat of [true, false]) {
    it.concurrent(`processing for 1.5x the visibility timeout with the heartbeat ${heartbeat ? "on: received once" : "off: received again"}, processed once`, async () => {
      const pipeline = `slow-${uid()}`;
      const o = captureOutput({ pipeline });
      const q = await createQueue(`slow-${uid()}`, { VisibilityTimeout: "2" });
      await local.sqs.send(
        new SendMessageCommand({
          QueueUrl: q.url,
          MessageBody: JSON.stringify({ Records: [s3Record({ key: `slow/${uid()}` })] }),
        }),
      );
      let calls = 0;
      const handler = form.wrap(
        "sqs",
        async () => {
          calls++;
          await sleep(3_000); // past the queue's 2 s: redelivered unless extended
          return "done";
        },
        {
          store: tables.store,
          pipeline,
          sqsClient: local.sqs,
          visibilityHeartbeat: heartbeat
            ? {
                visibilityTimeoutSeconds: 2,
                intervalSeconds: 1,
                queueUrl: (arn) => local.server.queueUrl(queueName(arn)),
              }
            : false,
        },
      );

      // Two pollers, as two concurrent function instances of one event source mapping.
      const received: PollResult["received"] = [];
      let stop = false;
      const poller = async () => {
        while (!stop) {
          const r = await pollOnce(local.sqs, q.url, q.arn, handler);
          received.push(...r.received);
          if (r.received.length === 0) await sleep(100);
        }
      };
      const pollers = [poller(), poller()];
      const until = Date.now() + 12_000;
      for (;;) {
        await sleep(200);
        const { Attributes } = await local.sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: q.url,
            AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
          }),
        );
        const empty =
          Attributes?.ApproximateNumberOfMessages === "0" &&
          Attributes?.ApproximateNumberOfMessagesNotVisible === "0";
        if (empty || Date.now() > until) break;
      }
      stop = true;
      await Promise.all(pollers);

      expect(calls).toBe(1);
      expect(o.metrics().processed).toBe(1);
      if (heartbeat) {
        expect(received.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(["1"]);
        expect(o.metrics().duplicate).toBeUndefined();
      } else {
        // The failure the heartbeat fixes: a second consumer got the message while it was being processed.
        // (Each later receive waits for the first run as in-flight, then acknowledges it as a duplicate.)
        const counts = received.map((m) => Number(m.Attributes?.ApproximateReceiveCount)).sort();
        expect(counts.length).toBeGreaterThanOrEqual(2);
        expect(counts.slice(0, 2)).toEqual([1, 2]);
        const duplicates = messages(o).filter((m) =>
          m.startsWith(`duplicate skipped for ${EXAMPLE_BUCKET}/slow/`),
        );
        expect(duplicates).toHaveLength(counts.length - 1);
      }
    }, 20_000);
  }

  it.runIf(form.name === "function")(
    "heartbeat in a batch: a record done early stays extended until the batch returns, so it is not redelivered",
    async () => {
      const q = await createQueue(`batch-${uid()}`, { VisibilityTimeout: "2" });
      for (const key of [`fast/${uid()}`, `slow/${uid()}`]) {
        await local.sqs.send(
          new SendMessageCommand({
            QueueUrl: q.url,
            MessageBody: JSON.stringify({ Records: [s3Record({ key })] }),
          }),
        );
      }
      const handler = form.wrap(
        "sqs",
        async (event) => {
          if (event.kind === "s3" && event.key.startsWith("slow/")) await sleep(3_000);
          return "done";
        },
        {
          store: tables.store,
          sqsClient: local.sqs,
          visibilityHeartbeat: {
            visibilityTimeoutSeconds: 2,
            intervalSeconds: 1,
            queueUrl: (arn) => local.server.queueUrl(queueName(arn)),
          },
        },
      );
      // Both messages in one batch, while a second poller watches the queue for a redelivery.
      const first = pollOnce(local.sqs, q.url, q.arn, handler, { max: 10 });
      await sleep(300);
      const redelivered: string[] = [];
      let stop = false;
      const watcher = (async () => {
        while (!stop) {
          const r = await pollOnce(local.sqs, q.url, q.arn, handler);
          redelivered.push(...r.received.map((m) => m.Body ?? ""));
          await sleep(200);
        }
      })();
      const batch = await first;
      stop = true;
      await watcher;
      expect(batch.received).toHaveLength(2);
      expect(batch.failed).toEqual([]);
      expect(redelivered).toEqual([]);
    },
    20_000,
  );

  it("application messages: stale, superseded, lease lost and duplicate lines and counters", async () => {
    const o = captureOutput();
    const orderId = `order-${uid()}`;
    let releaseV1!: () => void;
    const gate = new Promise<void>((resolve) => {
      releaseV1 = resolve;
    });
    let v1Started!: () => void;
    const started = new Promise<void>((resolve) => {
      v1Started = resolve;
    });
    const handler = form.wrap(
      "sqs",
      async (e) => {
        const { version } = body(e as MessageEvent);
        if (version === 1) {
          v1Started();
          await gate;
        }
        return { version };
      },
      {
        store: tables.store,
        busy: "supersede",
        messages: "accept",
        subject: (m) => body(m).orderId,
        position: (m) => body(m).version,
      },
    );
    const send = (version: number) =>
      handler(sqsEvent(sqsRecord({ orderId, version })), lambdaContext()) as Promise<SQSBatchResponse>;

    const v1 = send(1);
    await started;
    expect(await send(2)).toEqual({ batchItemFailures: [] });
    releaseV1();
    expect(await v1).toEqual({ batchItemFailures: [] }); // lease lost: acknowledged, v2 holds the subject
    expect(await send(1)).toEqual({ batchItemFailures: [] }); // stale
    expect(await send(2)).toEqual({ batchItemFailures: [] }); // same version, new message id: duplicate

    const p = (n: number) => positionFromNumber(n);
    const lines = messages(o);
    expect(lines).toContain(`superseded older event of ${orderId} (${p(1)} -> ${p(2)})`);
    expect(lines).toContain(
      `lease lost for ${orderId}: superseded by a newer event; this run's result was not committed`,
    );
    expect(lines).toContain(`stale event skipped for ${orderId} (${p(1)} < ${p(2)})`);
    expect(lines).toContain(`duplicate skipped for ${orderId}`);
    expect(o.metrics()).toMatchObject({ processed: 1, superseded: 1, leaseLost: 1, stale: 1, duplicate: 1 });
    expect(await tables.store.read(stateKey(orderId, "", true))).toMatchObject({
      status: "done",
      committedPosition: p(2),
      result: JSON.stringify({ version: 2 }),
    });
  });

  it("payloadFingerprint: an order id reused with another body is a conflict (failed, counted), not a duplicate", async () => {
    const o = captureOutput();
    const orderId = `order-${uid()}`;
    const handler = form.wrap(
      "sqs",
      async (e) => JSON.parse((e as MessageEvent).body) as { amount: number },
      {
        store: tables.store,
        messages: "accept",
        subject: (m) => body(m).orderId,
        identity: (m) => body(m).orderId,
        payloadFingerprint: true,
      },
    );
    const send = (amount: number) => {
      const record = sqsRecord({ orderId, amount });
      return handler(sqsEvent(record), lambdaContext()).then((r) => ({ r, id: record.messageId }));
    };
    expect((await send(10)).r).toEqual({ batchItemFailures: [] });
    expect((await send(10)).r).toEqual({ batchItemFailures: [] }); // same body: a duplicate
    const other = await send(99);
    expect(other.r).toEqual({ batchItemFailures: [{ itemIdentifier: other.id }] });
    expect(messages(o)).toContain(
      `payload conflict for ${orderId}: the identity was committed with another payload; delivery failed`,
    );
    expect(o.metrics()).toMatchObject({ processed: 1, duplicate: 1, conflict: 1 });
  });

  it("deadline: waiting for a busy subject gives up before the Lambda times out, and the handler's signal aborts in time", async () => {
    const o = captureOutput();
    const orderId = `order-${uid()}`;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const options: EffectivelyOnceOptions = {
      store: tables.store,
      messages: "accept",
      subject: (m) => body(m).orderId,
      position: (m) => body(m).version,
      deadlineMarginMs: 500,
    };
    let abortReason: unknown;
    const handler = form.wrap(
      "sqs",
      async (e, ctx) => {
        const { version } = body(e as MessageEvent);
        if (version === 1) await gate;
        if (version === 3) {
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
          abortReason = ctx.signal.reason;
          throw ctx.signal.reason;
        }
        return version;
      },
      options,
    );
    const holder = handler(sqsEvent(sqsRecord({ orderId, version: 1 })), lambdaContext());
    await sleep(200);

    const waitStart = Date.now();
    const busyEvent = sqsEvent(sqsRecord({ orderId, version: 2 }));
    const busy = (await handler(busyEvent, lambdaContext({ timeoutMs: 1_500 }))) as SQSBatchResponse;
    const waitedMs = Date.now() - waitStart;
    expect(busy.batchItemFailures).toEqual([{ itemIdentifier: busyEvent.Records[0]?.messageId }]);
    // It waited, with back-off, but never past the budget (1 500 ms remaining - 500 ms margin).
    expect(waitedMs).toBeGreaterThanOrEqual(100);
    expect(waitedMs).toBeLessThan(1_100);
    expect(messages(o).some((m) => m.startsWith(`busy: ${orderId} is held by an older event`))).toBe(true);
    release();
    await holder;

    const other = `order-${uid()}`;
    const abortStart = Date.now();
    const aborted = (await handler(
      sqsEvent(sqsRecord({ orderId: other, version: 3 })),
      lambdaContext({ timeoutMs: 900 }),
    )) as SQSBatchResponse;
    expect(Date.now() - abortStart).toBeLessThan(900);
    expect(aborted.batchItemFailures).toHaveLength(1);
    expect(abortReason).toBeInstanceOf(LambdaDeadlineError);
    expect(await tables.store.read(stateKey(other, "", true))).toMatchObject({ status: "released" });
    expect(o.metrics()).toMatchObject({ busy: 1, failed: 1, processed: 1 });
  });

  it("EventBridge direct, SNS-in-SQS and EventBridge-in-SQS reach the handler as S3 events; a named attribute correlates", async () => {
    const o = captureOutput();
    const seen: string[] = [];
    const options = { store: tables.store, correlationAttribute: "traceId" };
    const handler: EventHandler = async (e, ctx) => {
      seen.push(`${ctx.delivery.envelope}:${e.kind === "s3" ? e.subject : "?"}`);
    };
    const k1 = `eb/${uid()}`;
    const k2 = `sns/${uid()}`;
    const k3 = `sqs-eb/${uid()}`;
    const direct = (await form.wrap(
      "eventbridge",
      handler,
      options,
    )(eventBridgeS3({ key: k1, sequencer: nextSequencer() }), lambdaContext())) as InvocationReport;
    expect(direct.deliveries[0]?.ok).toBe(true);

    const sqsHandlerUnderTest = form.wrap("sqs", handler, options);
    const batch = sqsEvent(
      sqsRecord(snsEnvelope({ Records: [s3Record({ key: k2 })] })),
      sqsRecord(eventBridgeS3({ key: k3, sequencer: nextSequencer() })),
    );
    const first = batch.Records[0]!;
    first.messageAttributes = {
      traceId: { stringValue: "trace-123", dataType: "String", stringListValues: [], binaryListValues: [] },
    };
    expect(await sqsHandlerUnderTest(batch, lambdaContext())).toEqual({ batchItemFailures: [] });

    expect(seen.sort()).toEqual(
      [
        `eventbridge:${EXAMPLE_BUCKET}/${k1}`,
        `sns-sqs-s3:${EXAMPLE_BUCKET}/${k2}`,
        `sqs-eventbridge:${EXAMPLE_BUCKET}/${k3}`,
      ].sort(),
    );
    const snsLines = o.logs().filter((l) => l.messageId === first.messageId);
    expect(snsLines.length).toBeGreaterThan(0);
    for (const l of snsLines) expect(l.correlation_id).toBe("trace-123");
  });

  it("standard batch: concurrency limit holds, and two events of one object run in order without a busy retry", async () => {
    const o = captureOutput();
    const key = `same/${uid()}`;
    let running = 0;
    let maxRunning = 0;
    const order: string[] = [];
    const handler = form.wrap(
      "sqs",
      async (e) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await sleep(50);
        order.push(e.kind === "s3" ? `${e.key}@${e.sequencer}` : "?");
        running--;
      },
      { store: tables.store, concurrency: 2, busy: "retry" },
    );
    const notification = (k: string, seq?: string) =>
      sqsRecord(s3Notification(s3Record({ key: k, sequencer: seq })));
    const batch = sqsEvent(
      notification(key, "00000000000000B1"),
      notification(`other/${uid()}`),
      notification(key, "00000000000000B2"),
      notification(`other/${uid()}`),
      notification(`other/${uid()}`),
    );
    expect(await handler(batch, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(maxRunning).toBe(2);
    expect(order.filter((s) => s.startsWith(key))).toEqual([
      `${key}@00000000000000B1`,
      `${key}@00000000000000B2`,
    ]);
    expect(o.metrics()).toMatchObject({ processed: 5 });
    expect(o.metrics().busy).toBeUndefined();
  });

  it("records not started before the deadline are deferred; a record with broken SQS metadata is failed by its messageId", async () => {
    const o = captureOutput();
    const handler = form.wrap(
      "sqs",
      async () => {
        await sleep(400); // ignores its signal, like a handler without cancellation
      },
      { store: tables.store, concurrency: 1, deadlineMarginMs: 300 },
    );
    const batch = sqsEvent(
      sqsRecord({ Records: [s3Record({ key: `slow/${uid()}` })] }),
      sqsRecord({ Records: [s3Record({ key: `late/${uid()}` })] }),
      sqsRecord({ Records: [s3Record({ key: `broken/${uid()}` })] }),
    );
    const [first, second, broken] = batch.Records;
    (broken as { receiptHandle?: string }).receiptHandle = undefined;
    const response = (await handler(batch, lambdaContext({ timeoutMs: 600 }))) as SQSBatchResponse;
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      [second?.messageId, broken?.messageId].sort(),
    );
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).not.toContain(first?.messageId);
    expect(messages(o).filter((m) => m.startsWith("deferred "))).toEqual([
      `deferred ${second?.messageId}: not started: too little time left before the Lambda times out`,
    ]);
    expect(o.metrics()).toMatchObject({ processed: 1, deferred: 1, malformed: 1 });
  });

  it("one guard for the wrapper: each event's guard steps are logged with its own delivery, batch records at once", async () => {
    const o = captureOutput();
    // Two orders whose claims a crashed run left behind (leases long over): the batch takes both over at once.
    const orders = [`order-${uid()}`, `order-${uid()}`];
    const position = positionFromNumber(1);
    const nowMs = Date.now() - 60_000;
    for (const orderId of orders) {
      const claimed = await tables.store.claim({
        key: stateKey(orderId, `p:${position}`, true),
        position,
        identity: `p:${position}`,
        nowMs,
        leaseUntilMs: nowMs + 1_000,
        expiresAtSeconds: Math.ceil(nowMs / 1000) + 3_600,
        supersede: false,
        fence: nowMs * 1000,
        token: `crashed-${orderId}`,
        leaseGraceMs: 0,
      });
      expect(claimed.claimed).toBe(true);
    }
    let running = 0;
    let together = 0;
    const handler = form.wrap(
      "sqs",
      async () => {
        running++;
        together = Math.max(together, running);
        await sleep(50);
        running--;
      },
      {
        store: tables.store,
        messages: "accept",
        subject: (m) => body(m).orderId,
        position: (m) => body(m).version,
      },
    );
    const batch = sqsEvent(...orders.map((orderId) => sqsRecord({ orderId, version: 1 })));
    expect(await handler(batch, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(together).toBe(2);
    const tookOver = o.logs().filter((l) => String(l.message).startsWith("took over "));
    expect(tookOver.map((l) => [l.message, l.correlation_id]).sort()).toEqual(
      batch.Records.map((r, i) => [
        `took over ${orders[i]} from a run whose lease expired (attempt 2)`,
        r.messageId,
      ]).sort(),
    );
    expect(o.metrics()).toMatchObject({ processed: 2, tookOver: 2 });
  });

  it("validates options eagerly and rejects a handler wired to the wrong trigger", async () => {
    const h: EventHandler = async () => {};
    const make = (options: Record<string, unknown>) => () =>
      form.wrap("sqs", h, { store: tables.store, ...options } as EffectivelyOnceOptions);
    expect(make({ leaseMS: 1000 })).toThrow(OptionsError);
    expect(make({ leaseMS: 1000 })).toThrow(/unknown option "leaseMS"/);
    expect(make({ visibilityHeartbeat: { visibilityTimeoutSeconds: 10, intervalSeconds: 10 } })).toThrow(
      /intervalSeconds \(10\) must be below visibilityTimeoutSeconds/,
    );
    expect(
      make({ visibilityHeartbeat: { visibilityTimeoutSeconds: 30, intervalSeconds: 10, every: 1 } }),
    ).toThrow(/unknown option "every"/);
    expect(make({ subject: () => "x" })).toThrow(/need messages: "accept"/);
    expect(make({ concurrency: 0 })).toThrow(/concurrency must be a positive integer/);
    expect(make({ heartbeatMs: 40_000 })).toThrow(/heartbeatMs/);
    expect(make({ deadlineMarginMs: -1 })).toThrow(/deadlineMarginMs/);

    if (form.name === "function") {
      const o = captureOutput();
      const wrong = sqsHandler(h, { store: tables.store }) as Wrapped;
      await expect(wrong(s3Notification(s3Record({ key: `x/${uid()}` })), lambdaContext())).rejects.toThrow(
        /sqsHandler got a direct/,
      );
      expect(o.metrics()).toMatchObject({ malformed: 1 });
    }
  });
});

describe.each(FORMS)(
  "$name form, mode apply (guard.apply: the handler computes, one request commits)",
  (form) => {
    const uid = () => `${form.name}-apply-${randomUUID().slice(0, 8)}`;

    it("same S3 payload twice: one effect, 'processed' then 'duplicate skipped' with the result; the handler computes both times", async () => {
      const o = captureOutput();
      const key = `photos/${uid()}.jpg`;
      const subject = `${EXAMPLE_BUCKET}/${key}`;
      const seen: string[] = [];
      const handler = form.wrapApply(
        "s3",
        (event, ctx) => {
          if (event.kind !== "s3") throw new Error("expected an S3 event");
          seen.push(`${ctx.delivery.envelope}:${ctx.stateKey}:${ctx.lambdaContext?.functionName}`);
          ctx.logger.info("computing the index row");
          tables.sink.putAtCommit(ctx, { pk: subject, value: "indexed" });
          return { indexed: event.key };
        },
        { store: tables.store, pipeline: "index" },
      );
      const event = s3Notification(s3Record({ key, requestId: "REQ-APPLY-1" }));
      const first = (await handler(event, lambdaContext())) as InvocationReport;
      const second = (await handler(structuredClone(event), lambdaContext())) as InvocationReport;

      const k = stateKey(subject, "", true);
      expect(seen).toEqual([`s3:${k}:eonce-test`, `s3:${k}:eonce-test`]);
      expect(first.deliveries[0]?.events).toEqual([
        { status: "processed", subject, result: { indexed: key } },
      ]);
      expect(second.deliveries[0]?.events).toEqual([
        { status: "duplicate", subject, result: { indexed: key } },
      ]);
      const committed = await tables.store.read(k);
      expect(committed).toMatchObject({ status: "done" });
      expect(await tables.sink.get(subject)).toMatchObject({ value: "indexed", srcFence: committed?.fence });
      const lines = messages(o);
      expect(lines.filter((m) => m === `processed ${subject}`)).toHaveLength(1);
      expect(lines.filter((m) => m === `duplicate skipped for ${subject}`)).toHaveLength(1);
      expect(lines.filter((m) => m === "computing the index row")).toHaveLength(2);
      for (const line of o.logs()) expect(line.correlation_id).toBe("REQ-APPLY-1");
      expect(o.metrics()).toMatchObject({ processed: 1, duplicate: 1 });
      expect(o.values("handlerDuration")).toHaveLength(2);
      for (const emf of o.emf()) expect(emf.pipeline).toBe("index");
    });

    it("the handler throws: nothing was claimed, the direct invoke throws for Lambda's retry, which processes once", async () => {
      const o = captureOutput();
      const key = `docs/${uid()}.txt`;
      const subject = `${EXAMPLE_BUCKET}/${key}`;
      let calls = 0;
      const handler = form.wrapApply(
        "eventbridge",
        (_event, ctx) => {
          if (++calls === 1) throw new Error("transient failure");
          tables.sink.putAtCommit(ctx, { pk: subject, value: "indexed" });
          return "ok";
        },
        { store: tables.store },
      );
      const event = eventBridgeS3({ key, sequencer: nextSequencer() });
      const error = await handler(event, lambdaContext()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DeliveryFailedError);
      expect((error as DeliveryFailedError).failures).toEqual([
        expect.objectContaining({ recordIndex: 0, status: "failed" }),
      ]);
      expect(messages(o)).toContain(
        `handler failed for ${subject}; nothing was claimed, delivery failed for a retry`,
      );
      expect(await tables.sink.get(subject)).toBeUndefined();
      const retry = (await handler(event, lambdaContext())) as InvocationReport;
      expect(retry.deliveries[0]?.events[0]?.status).toBe("processed");
      expect(await tables.sink.get(subject)).toMatchObject({ value: "indexed" });
      expect(o.metrics()).toMatchObject({ failed: 1, processed: 1 });
    });

    it("SQS: partial batch failures, FIFO groups in order with the rest of a failed group deferred, malformed to the DLQ path", async () => {
      const o = captureOutput();
      const arn = "arn:aws:sqs:us-east-1:000000000000:orders.fifo";
      const run = uid();
      const record = (group: string, n: number) =>
        sqsRecord(
          { orderId: `${run}-${group}`, group, n },
          { groupId: group, eventSourceARN: arn, messageId: `${group}${n}-${run}` },
        );
      const broken = sqsRecord("{not json", { groupId: "C", eventSourceARN: arn, messageId: `C1-${run}` });
      const event = sqsEvent(
        record("A", 1),
        record("B", 1),
        record("A", 2),
        broken,
        record("B", 2),
        record("A", 3),
      );
      const computed: string[] = [];
      const handler = form.wrapApply(
        "sqs",
        (e) => {
          const { group, n } = JSON.parse((e as MessageEvent).body) as { group: string; n: number };
          computed.push(`${group}${n}`);
          if (group === "A" && n === 2) throw new Error("A2 cannot be processed");
          return n;
        },
        {
          store: tables.store,
          messages: "accept",
          subject: (m) => body(m).orderId,
          identity: (m) => String(JSON.parse(m.body).n),
        },
      );
      const response = (await handler(event, lambdaContext())) as SQSBatchResponse;
      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([
        `A2-${run}`,
        `C1-${run}`,
        `A3-${run}`,
      ]);
      expect(computed.filter((c) => c.startsWith("A"))).toEqual(["A1", "A2"]);
      expect(computed.filter((c) => c.startsWith("B"))).toEqual(["B1", "B2"]);
      expect(messages(o)).toContain(
        `deferred A3-${run}: not processed: an earlier message of group A failed in this batch`,
      );
      expect(o.metrics()).toMatchObject({ processed: 3, failed: 1, malformed: 1, deferred: 1 });
    });

    it("ordered messages: a newer version wins, an older one is stale; records not started before the deadline are deferred", async () => {
      const o = captureOutput();
      const orderId = `order-${uid()}`;
      const handler = form.wrapApply("sqs", (e) => body(e as MessageEvent).version, {
        store: tables.store,
        messages: "accept",
        subject: (m) => body(m).orderId,
        position: (m) => body(m).version,
      });
      const send = (version: number) =>
        handler(sqsEvent(sqsRecord({ orderId, version })), lambdaContext()) as Promise<SQSBatchResponse>;
      expect(await send(2)).toEqual({ batchItemFailures: [] });
      expect(await send(1)).toEqual({ batchItemFailures: [] });
      const p = positionFromNumber;
      expect(messages(o)).toContain(`stale event skipped for ${orderId} (${p(1)} < ${p(2)})`);
      expect(o.metrics()).toMatchObject({ processed: 1, stale: 1 });

      o.clear();
      const slow = form.wrapApply(
        "sqs",
        async () => {
          await sleep(400); // computing takes longer than the time left
        },
        { store: tables.store, concurrency: 1, deadlineMarginMs: 300 },
      );
      const batch = sqsEvent(
        sqsRecord({ Records: [s3Record({ key: `slow/${uid()}` })] }),
        sqsRecord({ Records: [s3Record({ key: `late/${uid()}` })] }),
      );
      const late = (await slow(batch, lambdaContext({ timeoutMs: 600 }))) as SQSBatchResponse;
      expect(late.batchItemFailures).toEqual([{ itemIdentifier: batch.Records[1]?.messageId }]);
      expect(o.metrics()).toMatchObject({ processed: 1, deferred: 1 });
    });

    it("rejects, at construction, what needs a handler under a lease; Middy's two halves must agree on the mode", async () => {
      const compute: ApplyEventHandler = () => undefined;
      const make = (options: Record<string, unknown>) => () =>
        form.wrapApply("sqs", compute, { store: tables.store, ...options } as ApplyOptions);
      expect(make({ visibilityHeartbeat: { visibilityTimeoutSeconds: 30, intervalSeconds: 10 } })).toThrow(
        /visibilityHeartbeat: for mode "run" only \(mode "apply" runs no handler under a lease\)/,
      );
      expect(make({ heartbeatMs: 1_000, sqsClient: local.sqs })).toThrow(
        /heartbeatMs, sqsClient: for mode "run" only/,
      );
      expect(make({ visibilityHeartbeat: false })).not.toThrow();
      expect(make({ leaseMS: 1_000 })).toThrow(/unknown option "leaseMS"/);
      const bad = () => sqsHandler(compute as EventHandler, { store: tables.store, mode: "later" as "run" });
      expect(bad).toThrow(OptionsError);
      expect(bad).toThrow(/mode must be one of run, apply/);

      if (form.name === "middy") {
        const event = s3Notification(s3Record({ key: `m/${uid()}` }));
        const mixed = middy()
          .use(effectivelyOnce({ store: tables.store, mode: "apply" }))
          .handler(eachEvent(async () => {}));
        await expect(mixed(event, lambdaContext())).rejects.toThrow(
          /eachEvent: the handler is for mode "run", effectivelyOnce runs mode "apply"/,
        );
        expect(() => eachEvent(compute as EventHandler, { mode: "now" as "run" })).toThrow(OptionsError);
      }
    });
  },
);

describe("large SQS batches share one invocation signal", () => {
  for (const size of [10, 100]) {
    it(`a batch of ${size} records, all holding leases at once, emits no MaxListenersExceededWarning`, async () => {
      const o = captureOutput();
      const warnings: Error[] = [];
      const onWarning = (w: Error) => warnings.push(w);
      process.on("warning", onWarning);
      try {
        // Every handler waits until all have started: every lease and handler signal is live at the same time.
        let started = 0;
        let allStarted!: () => void;
        const all = new Promise<void>((resolve) => {
          allStarted = resolve;
        });
        const handler = sqsHandler(
          async (_event, ctx) => {
            if (++started === size) allStarted();
            await Promise.race([all, sleep(5_000)]);
            return ctx.signal.aborted;
          },
          { store: tables.store, concurrency: size, messages: "accept", heartbeatMs: 20, leaseMs: 3_000 },
        ) as Wrapped;
        const batch = sqsEvent(...Array.from({ length: size }, (_, i) => sqsRecord({ n: i })));
        const response = (await handler(batch, lambdaContext())) as SQSBatchResponse;
        // Warnings are emitted on the next tick.
        await sleep(10);
        expect(response).toEqual({ batchItemFailures: [] });
        expect(started).toBe(size);
        expect(o.metrics()).toMatchObject({ processed: size });
        expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
      } finally {
        process.off("warning", onWarning);
      }
    });
  }
});

describe("middy form: misuse", () => {
  it("fails loudly when the base handler is not eachEvent, or eachEvent runs without the middleware", async () => {
    const raw = middy()
      .use(effectivelyOnce({ store: tables.store }))
      .handler(async () => "raw");
    const event = s3Notification(s3Record({ key: `m/${randomUUID()}` }));
    await expect(raw(event, lambdaContext())).rejects.toThrow(/base handler must be eachEvent/);
    const alone = middy().handler(eachEvent(async () => {}));
    await expect(alone(event, lambdaContext())).rejects.toThrow(/add \.use\(effectivelyOnce/);
  });
});
