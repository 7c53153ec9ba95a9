import { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { s3Handler, sqsHandler, type WrapperMode } from "../../src/lambda/index.js";
import { lambdaContext, s3Notification, s3Record, sqsEvent, sqsRecord } from "../kit/index.js";

/**
 * How deep the path from a Lambda event to the commit is: a store whose commit (mode `run`) or claim-and-commit
 * (mode `apply`) throws, and the stack frames between the wrapper's handler entry and that store call. Every frame
 * is a layer an event crosses; docs/architecture.md draws the path.
 */
const MAX_FRAMES = 12;

const QUIET = {
  logger: new Logger({ logLevel: "SILENT" }),
  metrics: { addDimension() {}, addMetric() {}, publishStoredMetrics() {} } as unknown as Metrics,
};

/** A memory store whose commit throws, keeping the stack it threw with. */
function throwingStore(): { store: MemoryStore; stacks: string[] } {
  const store = new MemoryStore();
  const stacks: string[] = [];
  const fail = (): never => {
    const error = new Error("commit refused by the test");
    stacks.push(error.stack ?? "");
    throw error;
  };
  store.commit = fail;
  store.claimAndCommit = fail;
  return { store, stacks };
}

/**
 * Frames from the wrapper's handler entry (included) down to the store call (excluded): those above the caller's
 * marker and below the throwing store method, less Node's own (the microtask queue).
 */
function framesBetween(stack: string, marker: string): number {
  const frames = stack
    .split("\n")
    .filter((line) => line.trimStart().startsWith("at ") && !line.includes("node:internal"));
  const entry = frames.findIndex((f) => f.includes(marker));
  if (entry < 0) throw new Error(`no ${marker} frame in:\n${stack}`);
  return entry - 1; // frame 0 is the store method itself
}

async function depth(trigger: "s3" | "sqs", mode: WrapperMode): Promise<{ frames: number; stack: string }> {
  const { store, stacks } = throwingStore();
  const options = { store, ...QUIET, ...(mode === "apply" ? { mode } : {}) } as const;
  const handler = async () => "done";
  const wrapped =
    trigger === "s3"
      ? s3Handler(handler, options as { store: MemoryStore })
      : sqsHandler(handler, options as { store: MemoryStore });
  const event =
    trigger === "s3"
      ? s3Notification(s3Record({ key: "depth" }))
      : sqsEvent(sqsRecord(s3Notification(s3Record({ key: "depth" })), { messageId: "m-1" }));
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 100;
  try {
    // The marker frame: the Lambda runtime calling the wrapper.
    const call = wrapped as (e: unknown, c: unknown) => Promise<unknown>;
    async function lambdaRuntimeEntry() {
      return await call(event, lambdaContext());
    }
    await lambdaRuntimeEntry().catch(() => undefined);
  } finally {
    Error.stackTraceLimit = limit;
  }
  const stack = stacks[0] ?? "";
  return { frames: framesBetween(stack, "lambdaRuntimeEntry"), stack };
}

describe("the path from a Lambda event to the commit", () => {
  for (const trigger of ["s3", "sqs"] as const) {
    for (const mode of ["run", "apply"] as const) {
      it(`${trigger}, mode ${mode}: at most ${MAX_FRAMES} frames from the handler entry to the store`, async () => {
        const { frames, stack } = await depth(trigger, mode);
        if (process.env.EONCE_PRINT_DEPTH) console.log(`${trigger} ${mode}: ${frames} frames\n${stack}`);
        expect(frames, stack).toBeLessThanOrEqual(MAX_FRAMES);
      });
    }
  }
});
