import type { S3Event } from "aws-lambda";
import { describe, expectTypeOf, it } from "vitest";
import type { HandlerOutcomes } from "../../src/local/index.js";

describe("HandlerOutcomes: what a hand-written handler returns for eonce run to count", () => {
  it("takes statuses of the outcome table, and only those", () => {
    const handler = async (event: S3Event): Promise<HandlerOutcomes> => ({
      outcomes: event.Records.map(() => ({ status: "processed" as const, subject: "b/k" })),
    });
    expectTypeOf(handler).returns.resolves.toHaveProperty("outcomes");
    // @ts-expect-error: not a status of src/core/outcomes.ts
    const wrong: HandlerOutcomes = { outcomes: [{ status: "done" }] };
    expectTypeOf(wrong).toEqualTypeOf<HandlerOutcomes>();
  });
});
