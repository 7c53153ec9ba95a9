import { type DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";
import type { StateStore } from "../../src/core/store.js";
import {
  type DispatchedPayload,
  durableEventBridgeDispatcher,
  type LambdaInvoker,
  type StableEvent,
} from "../../src/durable/index.js";
import type { DynamoDBStepEffects } from "../../src/engines/dynamodb/index.js";
import type { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { updateEffect } from "../../src/engines/dynamodb/sink-update.js";

/**
 * Images as a durable workflow: S3 → EventBridge → a dispatcher Lambda (the guard: one durable execution per upload,
 * in sequencer order per key) → the durable function, two guarded steps: `resize` (the thumbnail's index row, a
 * fenced sink row per key) and `notify` (a notification counted in an outbox row, for a stream or poller to send).
 * Each step's writes land once with its marker; an older upload's execution is refused once a newer one started.
 */

/** The dispatcher Lambda: `export const handler = imagesDispatcher({ … })`. */
export function imagesDispatcher(config: {
  store: StateStore;
  lambda: LambdaInvoker;
  /** The durable function, qualified (`images-workflow:live`). */
  functionName: string;
  stepEffects: DynamoDBStepEffects;
}) {
  return durableEventBridgeDispatcher({ ...config, pipeline: "images-durable" });
}

/** What the workflow writes to, and the thumbnail renderer (reads the upload, writes the thumbnail object). */
export interface ImagesWorkflowConfig {
  effects: DynamoDBStepEffects;
  /** The thumbnails' index: one fenced row per `bucket/key`. */
  index: DynamoDBFencedSink;
  /** The outbox table (hash key `pk`): `sent` counts the notifications of a key. */
  outboxTable: string;
  /**
   * Renders the thumbnail of the upload the event names to a key derived from it: running it again rewrites the same
   * object, so a step that runs twice costs a render, never a second effect.
   */
  render: (event: StableEvent) => Promise<{ thumbnailKey: string; bytes: number }>;
  /** Fault injection for tests: called after a step's effects landed, before the step returns. */
  afterEffects?: (step: string, attempt: number) => void;
}

/** The durable function's handler: `export const handler = imagesWorkflow({ … })`. */
export function imagesWorkflow(config: ImagesWorkflowConfig) {
  return withDurableExecution(async (payload: DispatchedPayload, context: DurableContext) => {
    const { effects } = config;
    const guarded = <R>(name: string, fn: Parameters<DynamoDBStepEffects["commitStep"]>[2]) =>
      context.step(name, async (step) => {
        const outcome = await effects.commitStep(payload, name, fn);
        config.afterEffects?.(name, step.attempt);
        return outcome as Awaited<ReturnType<typeof effects.commitStep<R>>>;
      });

    const resized = await guarded<{ thumbnailKey: string }>("resize", async (ctx) => {
      const thumbnail = await config.render(payload.event);
      config.index.putAtCommit(ctx, {
        pk: ctx.subject,
        thumbnail: thumbnail.thumbnailKey,
        bytes: thumbnail.bytes,
      });
      return { thumbnailKey: thumbnail.thumbnailKey };
    });
    if (resized.status === "stale") return { skipped: "superseded", current: resized.current };

    const notified = await guarded("notify", (ctx) => {
      ctx.atCommit(
        updateEffect({
          tableName: config.outboxTable,
          key: { pk: `notify#${ctx.subject}` },
          add: { sent: 1 },
          set: { lastExecution: ctx.executionName, lastPosition: ctx.position ?? "" },
        }),
      );
      return { notified: true };
    });
    return { resize: resized.status, notify: notified.status };
  });
}
