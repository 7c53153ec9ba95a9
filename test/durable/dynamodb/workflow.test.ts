import { type DurableContext, withDurableExecution } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { describe, expect, it } from "vitest";
import type { DispatchedPayload } from "../../../src/durable/index.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { updateEffect } from "../../../src/engines/dynamodb/sink-update.js";
import { imagesOnDynamoDB } from "./images.js";

const images = imagesOnDynamoDB({ skipTime: true });

describe("guarded durable steps on DynamoDB Local", () => {
  it("apply each step's effect once under a crash after the effect and repeated runs of the execution", async () => {
    const { payloads } = await images.dispatch("crash.jpg", ["0A"]);
    const payload = payloads[0] as DispatchedPayload;
    // Throws after the step's transaction landed and before the step returns: the SDK runs the step again.
    const faulty = images.runner((_step, attempt) => {
      if (attempt === 1) throw new Error("crash between the effect and the checkpoint");
    });
    for (let run = 0; run < 3; run++) {
      const execution = await faulty.run({ payload });
      expect(execution.getStatus()).toBe("SUCCEEDED");
      expect(execution.getResult()).toEqual({ resize: "duplicate", notify: "duplicate" });
    }
    const subject = payload.execution.subject;
    expect(images.renders()).toBeGreaterThanOrEqual(6); // the steps ran again and again: their effects landed once
    expect((await images.sent(subject))?.sent).toBe(1);
    expect(await images.index.get(subject)).toMatchObject({
      thumbnail: "thumbs/cat.jpg",
      srcPos: payload.execution.position,
    });
    expect(await images.effects.marker(payload, "resize")).toEqual({
      applied: true,
      result: { thumbnailKey: "thumbs/cat.jpg" },
    });
  });

  it("refuses an older upload's execution once a newer one's step landed", async () => {
    const { payloads } = await images.dispatch("late.jpg", ["0A"]);
    const { payloads: newer } = await images.dispatch("late.jpg", ["0B"]);
    await images.runner().run({ payload: newer[0] });
    const old = await images.runner().run({ payload: payloads[0] });
    expect(old.getResult()).toMatchObject({
      skipped: "superseded",
      current: { position: newer[0]?.execution.position },
    });
    const subject = newer[0]?.execution.subject ?? "";
    expect(await images.sent(subject)).toMatchObject({ sent: 1, lastPosition: newer[0]?.execution.position });
    expect((await images.index.get(subject))?.srcPos).toBe(newer[0]?.execution.position);
  });

  it("step() runs fn as context.step: a rerun of the execution is answered from the marker", async () => {
    const { payloads } = await images.dispatch("wrapped.jpg", ["0A"]);
    let runs = 0;
    const handlerFunction = withDurableExecution(
      async (payload: DispatchedPayload, context: DurableContext) =>
        images.effects.step(context, "count", payload, (ctx) => {
          runs++;
          ctx.atCommit(
            updateEffect({
              tableName: images.tables.outbox,
              key: { pk: `count#${ctx.subject}` },
              add: { n: 1 },
            }),
          );
          return { runs };
        }),
    );
    const first = await new LocalDurableTestRunner({ handlerFunction }).run({ payload: payloads[0] });
    const second = await new LocalDurableTestRunner({ handlerFunction }).run({ payload: payloads[0] });
    expect(first.getResult()).toMatchObject({ status: "processed", result: { runs: 1 } });
    expect(second.getResult()).toEqual({ status: "duplicate", result: { runs: 1 } });
    expect(runs).toBe(2);
    const row = await new DynamoDBFencedSink({ client: images.client, tableName: images.tables.outbox }).get(
      `count#${payloads[0]?.execution.subject}`,
    );
    expect(row?.n).toBe(1);
  });

  it("refuses a stopped execution's late steps", async () => {
    const { payloads } = await images.dispatch("stop.jpg", ["0A"]);
    expect(await images.effects.stop(payloads[0] as DispatchedPayload)).toBe("stopped");
    const execution = await images.runner().run({ payload: payloads[0] });
    expect(execution.getResult()).toMatchObject({ skipped: "superseded", current: { stopped: true } });
    expect(await images.sent(payloads[0]?.execution.subject ?? "")).toBeUndefined();
  });
});
