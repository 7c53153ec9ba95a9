import { randomUUID } from "node:crypto";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { afterAll, beforeAll } from "vitest";
import { imagesWorkflow } from "../../../examples/images-durable/workflow.js";
import {
  type DispatchedPayload,
  DynamoDBStepEffects,
  durableS3Dispatcher,
} from "../../../src/durable/index.js";
import { createStateTable, createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../../src/engines/dynamodb/store.js";
import { lambdaContext } from "../../kit/context.js";
import { localDynamoDB } from "../../kit/dynamodb.js";
import { s3Notification, s3Record } from "../../kit/events.js";
import { FakeDurableLambda } from "../fake-lambda.js";
import { quietLogger, quietMetrics } from "../harness.js";

/**
 * The images workflow on DynamoDB Local for one test file: its tables, the dispatcher and LocalDurableTestRunner.
 * `skipTime` fakes the process's timers and Date while the file runs (step retries without their real delay), and
 * a fake clock that stands still between ticks can give two claims fences out of order (the guard then claims again
 * above the fence: a second request), so the files that count requests run on real time.
 */
export function imagesOnDynamoDB(options: { skipTime: boolean }) {
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
  let renders = 0;
  const render = async () => {
    renders++;
    return { thumbnailKey: "thumbs/cat.jpg", bytes: 512 };
  };

  beforeAll(async () => {
    await LocalDurableTestRunner.setupTestEnvironment({ skipTime: options.skipTime });
    await createStateTable(client, { tableName: tables.state });
    for (const t of [tables.effects, tables.index, tables.outbox])
      await createTableIfMissing(client, t, "pk");
  });
  afterAll(async () => {
    await LocalDurableTestRunner.teardownTestEnvironment();
    client.destroy();
  });

  return {
    client,
    tables,
    effects,
    index,
    /** How many thumbnails were rendered so far. */
    renders: () => renders,
    /** The payloads the dispatcher sends for uploads of one key (a fresh key per test). */
    async dispatch(key: string, sequencers: string[], withFence = false) {
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
    },
    /** A runner of the images workflow; `afterEffects` throws after a step's effects landed, for crash tests. */
    runner(afterEffects?: (step: string, attempt: number) => void) {
      const handlerFunction = imagesWorkflow({
        effects,
        index,
        outboxTable: tables.outbox,
        render,
        ...(afterEffects ? { afterEffects } : {}),
      });
      return new LocalDurableTestRunner({ handlerFunction });
    },
    /** The key's outbox row. */
    sent: (subject: string) =>
      new DynamoDBFencedSink({ client, tableName: tables.outbox }).get(`notify#${subject}`),
  };
}
