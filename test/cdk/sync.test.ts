import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as cdk from "../../src/cdk/index.js";
import * as observe from "../../src/observe/metrics.js";

// The construct reads the runtime's names from modules with no imports, so a CDK app never loads the runtime.
describe("the construct and the runtime agree", () => {
  it("on metric names, namespace and dimension (one dependency-free module serves both)", () => {
    expect(cdk.OUTCOME_METRICS).toEqual(observe.COUNTERS);
    expect(cdk.METRIC_NAMESPACE).toBe(observe.DEFAULT_NAMESPACE);
    expect(cdk.PIPELINE_DIMENSION).toBe(observe.PIPELINE_DIMENSION);
    expect(cdk.RECEIVE_COUNT_METRIC).toBe(observe.RECEIVE_COUNT_METRIC);
    expect(cdk.HANDLER_DURATION_METRIC).toBe(observe.HANDLER_DURATION_METRIC);
  });

  it("src/cdk imports nothing from the runtime but dependency-free modules (option checks, names, outcomes)", () => {
    const dir = new URL("../../src/cdk/", import.meta.url);
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(new URL(file, dir), "utf8");
      for (const [, spec] of text.matchAll(/from "([^"]+)"/g)) {
        const ok =
          spec!.startsWith("aws-cdk-lib") ||
          spec === "constructs" ||
          spec!.startsWith("node:") ||
          spec!.startsWith("./") ||
          spec === "../core/errors.js" ||
          spec === "../observe/metric-names.js" ||
          spec === "../core/options.js" ||
          spec === "../core/describe-value.js" ||
          spec === "../core/outcomes.js" ||
          spec === "../engines/dynamodb/schema-names.js" ||
          spec === "../engines/dynamodb/outbox-names.js" ||
          spec === "../core/inline-prefix.js";
        expect(ok, `${file} imports ${spec}`).toBe(true);
      }
    }
  });

  it("and the runtime never imports aws-cdk-lib", () => {
    const root = fileURLToPath(new URL("../../src/", import.meta.url));
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((f) => {
        const p = join(dir, f);
        return statSync(p).isDirectory() ? (f === "cdk" ? [] : walk(p)) : [p];
      });
    for (const file of walk(root).filter((f) => f.endsWith(".ts"))) {
      expect(readFileSync(file, "utf8"), file).not.toMatch(/from "(aws-cdk-lib|constructs|cdk-nag)/);
    }
  });
});
