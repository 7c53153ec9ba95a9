import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, type CfnResource, Stack } from "aws-cdk-lib";
import { Annotations, Match } from "aws-cdk-lib/assertions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { afterAll, describe, expect, it } from "vitest";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";
import { INLINE } from "./helpers.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * CDK's built-in template validation (the CloudFormation Validate plugin: resource schemas and rules),
 * with its findings as errors (by default it downgrades them to warnings) and warnings failing too.
 */
function strictApp(): App {
  const outdir = mkdtempSync(join(tmpdir(), "eonce-cdk-"));
  dirs.push(outdir);
  return new App({
    outdir,
    context: {
      "@aws-cdk/core:validateAgainstDefaultRules": true,
      "@aws-cdk/core:strictCfnValidateErrors": true,
    },
  });
}

function report(app: App): { pluginReports: { pluginName: string; violations: { ruleName: string }[] }[] } {
  const assembly = app.synth({ validateOnSynthesis: true });
  return JSON.parse(readFileSync(join(assembly.directory, "validation-report.json"), "utf8"));
}

const CONFIGS: Omit<EffectivelyOncePipelineProps, "code" | "handler">[] = [
  { pipelineName: "records", delivery: "s3-direct", recordsTable: true },
  {
    pipelineName: "images",
    delivery: "s3-eventbridge",
    outputBucket: true,
    objectKeyPrefix: "a/",
    objectKeySuffix: ".png",
  },
  { pipelineName: "s3q", delivery: "s3-sqs", maxBatchingWindowSeconds: 5, batchSize: 100, maxConcurrency: 5 },
  { pipelineName: "orders", delivery: "sqs", recordsTable: true },
  { pipelineName: "fifo", delivery: "sqs", fifo: true, removal: "destroy" },
  { pipelineName: "clicks", delivery: "kinesis", batchSize: 500, maxBatchingWindowSeconds: 2 },
  { pipelineName: "profiles", delivery: "dynamodb-streams", parallelizationFactor: 2, removal: "destroy" },
];

describe("built-in template validation", () => {
  it("every delivery synthesizes with no validation finding, error or warning annotation", () => {
    const app = strictApp();
    const stacks = CONFIGS.map((config, i) => {
      const stack = new Stack(app, `Valid${i}`);
      new EffectivelyOncePipeline(stack, "P", { ...INLINE, ...config } as EffectivelyOncePipelineProps);
      return stack;
    });
    expect(report(app).pluginReports).toEqual([]);
    for (const stack of stacks) {
      const annotations = Annotations.fromStack(stack);
      expect(annotations.findError("*", Match.anyValue())).toEqual([]);
      expect(annotations.findWarning("*", Match.anyValue())).toEqual([]);
    }
  }, 180_000); // the validation engine (WASM) is slow to start on 2 cores

  it("catches what it should (the validation can fail)", () => {
    const app = strictApp();
    const stack = new Stack(app, "Invalid");
    const queue = new sqs.Queue(stack, "Queue");
    (queue.node.defaultChild as CfnResource).addPropertyOverride("VisibilityTimeout", 99_999);
    expect(() => report(app)).toThrow(/VisibilityTimeout: 99999 is greater than the maximum of 43200/);
  }, 180_000);
});
