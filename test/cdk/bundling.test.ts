import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { CfnFunction } from "aws-cdk-lib/aws-lambda";
import { afterAll, describe, expect, it } from "vitest";
import { EffectivelyOncePipeline } from "../../src/cdk/index.js";

const fixture = fileURLToPath(new URL("./fixtures/handler.ts", import.meta.url));
const outdir = mkdtempSync(join(tmpdir(), "eonce-cdk-bundle-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe("bundling a real handler", () => {
  it("bundles with the local esbuild (no Docker) into an ES module that loads on Node", async () => {
    const app = new App({ outdir });
    const stack = new Stack(app, "Bundled");
    const pipeline = new EffectivelyOncePipeline(stack, "P", {
      pipelineName: "bundled",
      delivery: "s3-direct",
      entry: fixture,
    });
    const template = Template.fromStack(stack);
    const id = stack.resolve((pipeline.function.node.defaultChild as CfnFunction).logicalId) as string;
    const fn = template.toJSON().Resources[id];
    expect(fn.Properties.Handler).toBe("index.handler");
    const code = fn.Properties.Code;
    expect(code.S3Key).toMatch(/^[0-9a-f]{64}\.zip$/);

    // The asset staged in the cloud assembly: one ES module with its source map.
    const assetDir = join(outdir, `asset.${code.S3Key.replace(/\.zip$/, "")}`);
    expect(existsSync(join(assetDir, "index.mjs"))).toBe(true);
    expect(existsSync(join(assetDir, "index.mjs.map"))).toBe(true);
    const source = readFileSync(join(assetDir, "index.mjs"), "utf8");
    expect(source.startsWith("import { createRequire as __eonceCreateRequire }")).toBe(true);
    // The SDK is bundled (pinned), not imported from the runtime.
    expect(source).not.toMatch(/from\s*["']@aws-sdk\//);
    expect(source).toContain("ReturnValuesOnConditionCheckFailure");

    // It loads as a module and exports the handler (the store needs a table name at load time).
    process.env.STATE_TABLE = "state";
    const loaded = (await import(pathToFileURL(join(assetDir, "index.mjs")).href)) as { handler: unknown };
    expect(typeof loaded.handler).toBe("function");
  }, 180_000);
});
