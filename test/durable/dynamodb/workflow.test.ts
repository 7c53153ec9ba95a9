import { randomUUID } from "node:crypto";
import { type DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imagesWorkflow } from "../../../examples/images-durable/workflow.js";
import {
  type DispatchedPayload,
  DynamoDBStepEffects,
  durableS3Dispatcher,
} from "../../../src/durable/index.js";
import { createStateTable, createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { updateEffect } from "../../../src/engines/dynamodb/sink-update.js";
import { DynamoDBStore } from "../../../src/engines/dynamodb/store.js";
import { countRequests } from "../../../src/observe/request-counter.js";
import { lambdaContext } from "../../kit/context.js";
import { localDynamoDB } from "../../kit/dynamodb.js";
import { s3Notification, s3Record } from "../../kit/events.js";
import { FakeDurableLambda } from "../fake-lambda.js";
import { quietLogger } from "../harness.js";

const client = localDynamoDB();
const suffix = randomUUID().slice(0, 8);
const tables = {
  state: `durable-state-${suffix}`,
  effects: `durable-effects-${suffix}`,
  index: `durable-index-${suffix}`,
  outbox: `durable-outbox-${suffix}`,
};
const silent = quietLogger();
const effects = new DynamoDBStepEffects({
  client,
  tableName: tables.effects,
  logger: silent,
  metrics: quietMetrics(),
});
const index = new DynamoDBFencedSink({ client, tableName: tables.index });
const store = new DynamoDBStore({ client, tableName: tables.state });

function quietMetrics() {
  return { addMetric() {}, addDimension() {}, publishStoredMetrics() {} } as never;
}

beforeAll(async () => {
  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: true });
  await createStateTable(client, { tableName: tables.state });
  for (const t of [tables.effects, tables.index, tables.outbox]) await createTableIfMissing(client, t, "pk");
});
afterAll(async () => {
  await LocalDurableTestRunner.teardownTestEnvironment();
  client.destroy();
});

let renders = 0;
const render = async () => {
  renders++;
  return { thumbnailKey: "thumbs/cat.jpg", bytes: 512 };
};

/** The payloads the dispatcher sends for uploads of one key (a fresh key per test). */
async function dispatch(key: string, sequencers: string[], withFence = false) {
  const lambda = new FakeDurableLambda();
  const handler = durableS3Dispatcher({
    store,
    lambda,
    functionName: "images-workflow:live",
    logger: silent,
    metrics: quietMetrics(),
    ...(withFence ? { stepEffects: effects } : {}),
  });
  for (const sequencer of sequencers)
    await handler(s3Notification(s3Record({ key, sequencer })), lambdaContext());
  return { lambda, payloads: lambda.started.map((s) => JSON.parse(s.payload) as DispatchedPayload) };
}

function runner(afterEffects?: (step: string, attempt: number) => void) {
  const handlerFunction = imagesWorkflow({
    effects,
    index,
    outboxTable: tables.outbox,
    render,
    ...(afterEffects ? { afterEffects } : {}),
  });
  return new LocalDurableTestRunner({ handlerFunction });
}

async function sent(subject: string) {
  const row = await new DynamoDBFencedSink({ client, tableName: tables.outbox }).get(`notify#${subject}`);
  return row;
}

describe("guarded durable steps on DynamoDB Local", () => {
  it("apply each step's effect once under a crash after the effect and repeated runs of the execution", async () => {
    const { payloads } = await dispatch("crash.jpg", ["0A"]);
    const payload = payloads[0] as DispatchedPayload;
    // Throws after the step's transaction landed and before the step returns: the SDK runs the step again.
    const faulty = runner((_step, attempt) => {
      if (attempt === 1) throw new Error("crash between the effect and the checkpoint");
    });
    for (let run = 0; run < 3; run++) {
      const execution = await faulty.run({ payload });
      expect(execution.getStatus()).toBe("SUCCEEDED");
      expect(execution.getResult()).toEqual({ resize: "duplicate", notify: "duplicate" });
    }
    const subject = payload.execution.subject;
    expect(renders).toBeGreaterThanOrEqual(6); // the steps ran again and again: their effects landed once
    expect((await sent(subject))?.sent).toBe(1);
    expect(await index.get(subject)).toMatchObject({
      thumbnail: "thumbs/cat.jpg",
      srcPos: payload.execution.position,
    });
    expect(await effects.marker(payload, "resize")).toEqual({
      applied: true,
      result: { thumbnailKey: "thumbs/cat.jpg" },
    });
  });

  it("costs one atomic write per guarded step: two TransactWriteItems for resize and notify, nothing else", async () => {
    const { payloads } = await dispatch("count.jpg", ["0A"]);
    const counter = countRequests(client, "durableStepCounter");
    const execution = await runner().run({ payload: payloads[0] });
    expect(execution.getResult()).toEqual({ resize: "processed", notify: "processed" });
    expect(counter.counts).toEqual({ TransactWriteItems: 2 });
    counter.reset();
    await runner().run({ payload: payloads[0] });
    expect(counter.counts).toEqual({ TransactWriteItems: 2 }); // a second execution: refused by the markers, in the same request
    client.middlewareStack.remove("durableStepCounter");
  });

  it("refuses an older upload's execution once a newer one's step landed", async () => {
    const { payloads } = await dispatch("late.jpg", ["0A"]);
    const { payloads: newer } = await dispatch("late.jpg", ["0B"]);
    await runner().run({ payload: newer[0] });
    const old = await runner().run({ payload: payloads[0] });
    expect(old.getResult()).toMatchObject({
      skipped: "superseded",
      current: { position: newer[0]?.execution.position },
    });
    const subject = newer[0]?.execution.subject ?? "";
    expect(await sent(subject)).toMatchObject({ sent: 1, lastPosition: newer[0]?.execution.position });
    expect((await index.get(subject))?.srcPos).toBe(newer[0]?.execution.position);
  });

  it("step() runs fn as context.step: a rerun of the execution is answered from the marker", async () => {
    const { payloads } = await dispatch("wrapped.jpg", ["0A"]);
    let runs = 0;
    const handlerFunction = withDurableExecution(
      async (payload: DispatchedPayload, context: DurableContext) =>
        effects.step(context, "count", payload, (ctx) => {
          runs++;
          ctx.atCommit(
            updateEffect({ tableName: tables.outbox, key: { pk: `count#${ctx.subject}` }, add: { n: 1 } }),
          );
          return { runs };
        }),
    );
    const first = await new LocalDurableTestRunner({ handlerFunction }).run({ payload: payloads[0] });
    const second = await new LocalDurableTestRunner({ handlerFunction }).run({ payload: payloads[0] });
    expect(first.getResult()).toMatchObject({ status: "processed", result: { runs: 1 } });
    expect(second.getResult()).toEqual({ status: "duplicate", result: { runs: 1 } });
    expect(runs).toBe(2);
    const row = await new DynamoDBFencedSink({ client, tableName: tables.outbox }).get(
      `count#${payloads[0]?.execution.subject}`,
    );
    expect(row?.n).toBe(1);
  });

  it("refuses a stopped execution's late steps", async () => {
    const { payloads } = await dispatch("stop.jpg", ["0A"]);
    expect(await effects.stop(payloads[0] as DispatchedPayload)).toBe("stopped");
    const execution = await runner().run({ payload: payloads[0] });
    expect(execution.getResult()).toMatchObject({ skipped: "superseded", current: { stopped: true } });
    expect(await sent(payloads[0]?.execution.subject ?? "")).toBeUndefined();
  });

  it("dispatches with one claim, one Invoke and one commit that moves the execution fence", async () => {
    const { payloads: first } = await dispatch("fence.jpg", ["0A"], true);
    const counter = countRequests(client, "durableDispatchCounter");
    const { lambda, payloads } = await dispatch("fence.jpg", ["0B"], true);
    expect(counter.counts).toEqual({ UpdateItem: 1, TransactWriteItems: 1 });
    expect(lambda.invokes).toBe(1);
    client.middlewareStack.remove("durableDispatchCounter");
    // The older execution never ran a step: the newer dispatch's commit already holds the fence.
    const old = await runner().run({ payload: first[0] });
    expect(old.getResult()).toMatchObject({
      skipped: "superseded",
      current: { position: payloads[0]?.execution.position },
    });
    const newer = await runner().run({ payload: payloads[0] });
    expect(newer.getResult()).toEqual({ resize: "processed", notify: "processed" });
  });
});
