import { App, Stack } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";
import { OptionsError } from "../../src/core/errors.js";
import { INLINE } from "./helpers.js";

/** Constructs without synthesizing: validation is eager, at construction. */
function construct(props: Record<string, unknown>): EffectivelyOncePipeline {
  const stack = new Stack(new App(), "T");
  return new EffectivelyOncePipeline(stack, "P", {
    ...INLINE,
    ...props,
  } as unknown as EffectivelyOncePipelineProps);
}

const base = { pipelineName: "p", delivery: "sqs" };

describe("EffectivelyOncePipeline options", () => {
  it.each([
    [{ ...base, timeout: 30 }, /unknown option "timeout"/],
    [{ ...base, visibilityTimeout: 300 }, /unknown option "visibilityTimeout"/],
    [{ ...base, memorySize: 1024 }, /unknown option "memorySize"/],
    [{ delivery: "sqs" }, /pipelineName is required/],
    [{ ...base, pipelineName: "has space" }, /pipelineName must be 1-40 letters/],
    [
      { ...base, delivery: "kafka" },
      /delivery must be one of s3-direct, s3-eventbridge, s3-sqs, sqs, kinesis, dynamodb-streams/,
    ],
    [{ ...base, timeoutSeconds: 0 }, /timeoutSeconds must be an integer from 1 to 900, got 0/],
    [{ ...base, timeoutSeconds: 901 }, /timeoutSeconds must be an integer from 1 to 900/],
    [{ ...base, timeoutSeconds: 1.5 }, /timeoutSeconds must be an integer/],
    // No primitive conversion: String() of these throws TypeError; the message must still be an OptionsError.
    [{ ...base, timeoutSeconds: Object.create(null) }, /timeoutSeconds must be an integer .*, got \{\}/],
    [{ ...base, fifo: { toString: 1 } }, /fifo must be a boolean, got \{"toString":1\}/],
    [{ ...base, pipelineName: "x".repeat(300) }, /got "x+…" \(300 characters\)$/],
    [{ ...base, memoryMiB: 64 }, /memoryMiB must be an integer from 128/],
    [{ ...base, visibilityTimeoutSeconds: "300" }, /visibilityTimeoutSeconds must be an integer/],
    [{ ...base, maxReceiveCount: 0 }, /maxReceiveCount must be an integer from 1/],
    [{ ...base, maxReceiveCount: 2 }, /maxReceiveCount \(2\) must be at least 5/],
    [
      { ...base, timeoutSeconds: 900, maxBatchingWindowSeconds: 300, visibilityTimeoutSeconds: 5000 },
      /must be at least/,
    ],
    [{ ...base, batchSize: 100 }, /batchSize above 10 needs maxBatchingWindowSeconds/],
    [{ ...base, fifo: true, maxBatchingWindowSeconds: 5 }, /not supported with FIFO/],
    [
      { ...base, fifo: true, batchSize: 11, maxBatchingWindowSeconds: 1 },
      /not supported with FIFO|batchSize must be/,
    ],
    [{ ...base, maxConcurrency: 1 }, /maxConcurrency must be an integer from 2 to 1000/],
    [{ ...base, objectKeyPrefix: "in/" }, /objectKeyPrefix applies to the S3 deliveries only/],
    [{ ...base, inputBucketRead: true }, /inputBucketRead applies to the S3 deliveries only/],
    [
      { pipelineName: "p", delivery: "s3-direct", visibilityTimeoutSeconds: 600 },
      /applies to the s3-sqs and sqs/,
    ],
    [{ pipelineName: "p", delivery: "s3-eventbridge", maxReceiveCount: 10 }, /applies to the s3-sqs and sqs/],
    [{ pipelineName: "p", delivery: "s3-eventbridge", batchSize: 5 }, /applies to the s3-sqs, sqs, kinesis/],
    [{ pipelineName: "p", delivery: "s3-sqs", fifo: true }, /fifo applies to the sqs delivery only/],
    [{ ...base, outputBucketRead: true }, /outputBucketRead needs outputBucket: true/],
    [{ ...base, recordsTableActions: ["dynamodb:PutItem"] }, /unknown option "recordsTableActions"/],
    [{ ...base, recordsTable: { actions: ["dynamodb:Scan"] } }, /recordsTable: actions must be one of/],
    [{ ...base, recordsTable: { actions: [] } }, /recordsTable: actions must be a non-empty list/],
    [{ ...base, recordsTable: { key: "id" } }, /recordsTable: unknown option "key"/],
    [{ ...base, recordsTable: { environmentVariable: "charges-table" } }, /must be a variable name/],
    [{ ...base, recordsTable: "yes" }, /recordsTable must be true, false or an object/],
    [{ ...base, architecture: "x86" }, /architecture must be one of arm64, x86_64/],
    [{ ...base, nativeModules: "sharp" }, /nativeModules must be a list of package names/],
    [{ ...base, nativeModules: ["sharp"] }, /nativeModules applies to bundled entries/],
    [{ ...base, logRetentionDays: 10 }, /logRetentionDays must be one of 1, 3, 5/],
    [{ ...base, removal: "snapshot" }, /removal must be one of retain, destroy/],
    [{ ...base, environment: { N: 1 } }, /environment.N must be a string/],
    [{ ...base, dashboard: "yes" }, /dashboard must be a boolean/],
  ])("rejects %j", (props, message) => {
    expect(() => construct(props)).toThrow(OptionsError);
    expect(() => construct(props)).toThrow(message);
  });

  it("needs exactly one of entry and code, and a file.export handler with code", () => {
    const stack = new Stack(new App(), "T");
    expect(() => new EffectivelyOncePipeline(stack, "A", { pipelineName: "p", delivery: "sqs" })).toThrow(
      /entry \(the handler file to bundle\) or code is required/,
    );
    expect(
      () =>
        new EffectivelyOncePipeline(stack, "B", {
          pipelineName: "p",
          delivery: "sqs",
          ...INLINE,
          entry: "x.ts",
        }),
    ).toThrow(/either entry .* or code/);
    expect(
      () =>
        new EffectivelyOncePipeline(stack, "C", {
          pipelineName: "p",
          delivery: "sqs",
          code: INLINE.code,
          handler: "handler",
        }),
    ).toThrow(/handler must name the file and the export/);
  });

  it("fills the defaults", () => {
    const p = construct({ ...base });
    expect(p.timeoutSeconds).toBe(30);
    expect(p.visibilityTimeoutSeconds).toBe(180);
    expect(p.queue).toBeDefined();
    expect(p.inputBucket).toBeUndefined();
    expect(p.outputBucket).toBeUndefined();
    expect(p.recordsTable).toBeUndefined();
    expect(p.dashboard).toBeDefined();
    const direct = construct({ pipelineName: "p", delivery: "s3-direct" });
    expect(direct.visibilityTimeoutSeconds).toBeUndefined();
    expect(direct.queue).toBeUndefined();
    expect(direct.inputBucket).toBeDefined();
  });
});
