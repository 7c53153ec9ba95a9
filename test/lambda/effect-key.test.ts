import type { SQSBatchResponse } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { quietObservability } from "../../examples/shared/demo-kit.js";
import { effectKey } from "../../src/core/effect-key.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import { lambdaContext } from "../kit/context.js";
import { sqsEvent, sqsRecord } from "../kit/events.js";

const options = {
  messages: "accept" as const,
  subject: (m: { body: string }) => `order/${m.body}`,
  identity: (m: { body: string }) => `v-${m.body}`,
  ...quietObservability(),
};

describe("ctx.effectKey through the Lambda wrappers", () => {
  for (const mode of ["run", "apply"] as const) {
    it(`mode ${mode}: the event's key, the same for a redelivery (another message id, receive count 2)`, async () => {
      const keys: string[] = [];
      let failFirst = true;
      const handler = sqsHandler(
        (_event: unknown, ctx: { effectKey(name: string): string }) => {
          keys.push(ctx.effectKey("charge"));
          if (failFirst) {
            failFirst = false;
            throw new Error("failed after the call");
          }
          return Promise.resolve("ok");
        },
        { ...options, store: new MemoryStore(), mode },
      );
      const first = (await handler(sqsEvent(sqsRecord("42")), lambdaContext())) as SQSBatchResponse;
      expect(first.batchItemFailures).toHaveLength(1);
      const again = (await handler(
        sqsEvent(sqsRecord("42", { receiveCount: 2 })),
        lambdaContext(),
      )) as SQSBatchResponse;
      expect(again.batchItemFailures).toHaveLength(0);
      expect(keys).toHaveLength(2);
      expect(keys[1]).toBe(keys[0]);
      expect(keys[0]).toBe(effectKey({ kind: "event", subject: "order/42", identity: "v-42" }, "charge"));
    });
  }
});
