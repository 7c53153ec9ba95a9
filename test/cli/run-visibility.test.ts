import { describe, expect, it } from "vitest";
import { resolveRunOptions } from "../../src/cli/run/options.js";

/** The handler a run needs: resolveRunOptions only checks its type. */
const base = { handler: "h.ts:handler", source: "sqs", generate: 3 } as const;

describe("eonce run's SQS visibility timeout", () => {
  it("defaults to the function timeout rounded up to a second, plus one", () => {
    expect(resolveRunOptions({ ...base }).visibilityTimeoutS).toBe(4);
    expect(resolveRunOptions({ ...base, timeoutMs: 2500 }).visibilityTimeoutS).toBe(4);
    expect(resolveRunOptions({ ...base, timeoutMs: 10_000 }).visibilityTimeoutS).toBe(11);
  });

  it("keeps a value given at or above the function timeout", () => {
    expect(resolveRunOptions({ ...base, visibilityTimeoutS: 3 }).visibilityTimeoutS).toBe(3);
    expect(resolveRunOptions({ ...base, visibilityTimeoutS: 60 }).visibilityTimeoutS).toBe(60);
  });

  it("keeps one below the function timeout (AWS would refuse it): to see messages reappear under live runs", () => {
    expect(resolveRunOptions({ ...base, timeoutMs: 5000, visibilityTimeoutS: 2 }).visibilityTimeoutS).toBe(2);
  });
});
