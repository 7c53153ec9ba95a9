import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as s3 from "aws-cdk-lib/aws-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../cdk/app.js";

const outdir = mkdtempSync(join(tmpdir(), "eonce-cdk-app-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

let templates: Record<string, Template>;
let synthMs = 0;

// The app as `npm run synth` builds it: the real example handlers, bundled by the local esbuild.
beforeAll(() => {
  const started = Date.now();
  const assembly = buildApp(new App({ outdir })).synth({ validateOnSynthesis: true });
  synthMs = Date.now() - started;
  templates = Object.fromEntries(assembly.stacks.map((s) => [s.stackName, Template.fromJSON(s.template)]));
}, 240_000);

const ofType = (t: Template, type: string) => Object.values(t.findResources(type));
const fn = (t: Template) => {
  const list = ofType(t, "AWS::Lambda::Function").filter((f) =>
    String(f.Properties.Runtime).startsWith("nodejs"),
  );
  expect(list).toHaveLength(1);
  return list[0]!;
};

describe("the reference app (cdk/app.ts)", () => {
  it("synthesizes three environment-agnostic stacks offline, with clean validation", () => {
    expect(Object.keys(templates).sort()).toEqual([
      "EffectivelyOnce-Images",
      "EffectivelyOnce-Orders",
      "EffectivelyOnce-Records",
    ]);
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8"));
    expect(report.pluginReports).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(outdir, "manifest.json"), "utf8"));
    for (const artifact of Object.values(manifest.artifacts) as { type: string; environment?: string }[]) {
      if (artifact.type === "aws:cloudformation:stack") {
        expect(artifact.environment).toBe("aws://unknown-account/unknown-region");
      }
    }
    console.info(`app synth (3 bundles, validation, nag): ${synthMs} ms`);
  });

  it("records: S3 → Lambda directly → DynamoDB rows keyed by id", () => {
    const t = templates["EffectivelyOnce-Records"]!;
    expect(ofType(t, "AWS::S3::Bucket")).toHaveLength(1);
    expect(ofType(t, "AWS::SQS::Queue")).toHaveLength(1); // the DLQ only
    expect(ofType(t, "AWS::Events::Rule")).toHaveLength(0);
    expect(ofType(t, "AWS::Lambda::EventInvokeConfig")).toHaveLength(1);
    const [notifications] = ofType(t, "Custom::S3BucketNotifications");
    expect(notifications!.Properties.NotificationConfiguration.LambdaFunctionConfigurations).toHaveLength(2);
    const keys = ofType(t, "AWS::DynamoDB::Table")
      .map((r) => r.Properties.KeySchema[0].AttributeName)
      .sort();
    expect(keys).toEqual(["id", "pk"]);
    expect(Object.keys(fn(t).Properties.Environment.Variables).sort()).toEqual([
      "EONCE_PIPELINE",
      "INPUT_BUCKET",
      "NODE_OPTIONS",
      "POWERTOOLS_METRICS_NAMESPACE",
      "POWERTOOLS_SERVICE_NAME",
      "RECORDS_TABLE",
      "STATE_TABLE",
    ]);
  });

  it("images: S3 → EventBridge → Lambda → output bucket, sharp shipped next to the bundle", () => {
    const t = templates["EffectivelyOnce-Images"]!;
    expect(ofType(t, "AWS::S3::Bucket")).toHaveLength(2);
    expect(ofType(t, "AWS::Events::Rule")).toHaveLength(1);
    expect(ofType(t, "AWS::DynamoDB::Table")).toHaveLength(1);
    const f = fn(t);
    expect(f.Properties.Environment.Variables.OUTPUT_BUCKET).toBeDefined();
    const asset = join(outdir, `asset.${f.Properties.Code.S3Key.replace(/\.zip$/, "")}`);
    expect(existsSync(join(asset, "index.mjs"))).toBe(true);
    expect(existsSync(join(asset, "node_modules", "sharp", "package.json"))).toBe(true);
    const cpu = f.Properties.Architectures[0] === "arm64" ? "arm64" : "x64";
    expect(existsSync(join(asset, "node_modules", "@img", `sharp-linux-${cpu}`, "package.json"))).toBe(true);
  });

  it("orders: SQS → Lambda → DynamoDB charges keyed by chargeId, no bucket", () => {
    const t = templates["EffectivelyOnce-Orders"]!;
    expect(ofType(t, "AWS::S3::Bucket")).toHaveLength(0);
    const queues = ofType(t, "AWS::SQS::Queue");
    expect(queues).toHaveLength(2);
    const source = queues.find((q) => q.Properties.RedrivePolicy)!;
    expect(source.Properties.VisibilityTimeout).toBe(180);
    expect(source.Properties.RedrivePolicy.maxReceiveCount).toBe(5);
    const [mapping] = ofType(t, "AWS::Lambda::EventSourceMapping");
    expect(mapping!.Properties.FunctionResponseTypes).toEqual(["ReportBatchItemFailures"]);
    const keys = ofType(t, "AWS::DynamoDB::Table")
      .map((r) => r.Properties.KeySchema[0].AttributeName)
      .sort();
    expect(keys).toEqual(["chargeId", "pk"]);
    const env = fn(t).Properties.Environment.Variables;
    expect(env.CHARGES_TABLE).toBeDefined();
    expect(Number(env.HEARTBEAT_VISIBILITY_S)).toBe(180);
    expect(Object.keys(t.findOutputs("*"))).toContain("QueueUrl");
  });

  it("every function: Node.js 22+, bundled ES module with source maps, its own role and log group", () => {
    for (const t of Object.values(templates)) {
      const f = fn(t);
      expect(Number(/^nodejs(\d+)\.x$/.exec(f.Properties.Runtime)?.[1])).toBeGreaterThanOrEqual(22);
      expect(f.Properties.Code.S3Key).toMatch(/\.zip$/);
      expect(f.Properties.Environment.Variables.NODE_OPTIONS).toBe("--enable-source-maps");
      expect(f.Properties.LoggingConfig.LogGroup).toBeDefined();
      expect(ofType(t, "AWS::CloudWatch::Dashboard")).toHaveLength(1);
      expect(ofType(t, "AWS::CloudWatch::Alarm")).toHaveLength(4);
    }
  });

  it("runs cdk-nag on synth: an unacknowledged finding fails it", () => {
    const dir = mkdtempSync(join(tmpdir(), "eonce-cdk-app-bad-"));
    try {
      const app = new App({ outdir: dir, context: { "aws:cdk:bundling-stacks": [] } });
      buildApp(app);
      new s3.Bucket(new Stack(app, "Unsafe"), "Bucket");
      expect(() => app.synth({ validateOnSynthesis: true })).toThrow(/AwsSolutions-S10/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
