import { App, Stack, Validations } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as s3 from "aws-cdk-lib/aws-s3";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { AwsSolutionsChecks, type NagPack, ServerlessChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { EffectivelyOncePipeline, type EffectivelyOncePipelineProps } from "../../src/cdk/index.js";
import { INLINE } from "./helpers.js";

const RELAY = {
  relayCode: lambda.Code.fromInline("export const handler = async () => ({ batchItemFailures: [] });"),
  relayHandler: "index.handler",
};

/**
 * cdk-nag 3 runs with this aws-cdk-lib (it is a validation plugin; `validateScope` runs it directly).
 * Two packs: AwsSolutions (required) and Serverless (it checks the visibility-timeout rule and the DLQs too).
 */
const CONFIGS: Record<string, Omit<EffectivelyOncePipelineProps, "code" | "handler">> = {
  records: {
    pipelineName: "records",
    delivery: "s3-direct",
    recordsTable: { keyAttribute: "id" },
    inputBucketRead: false,
  },
  images: { pipelineName: "images", delivery: "s3-eventbridge", outputBucket: true, outputBucketRead: true },
  s3sqs: { pipelineName: "s3q", delivery: "s3-sqs", objectKeyPrefix: "in/" },
  orders: { pipelineName: "orders", delivery: "sqs", recordsTable: { keyAttribute: "chargeId" } },
  fifo: { pipelineName: "fifo", delivery: "sqs", fifo: true },
  destroy: { pipelineName: "d", delivery: "s3-eventbridge", outputBucket: true, removal: "destroy" },
  // No state table: the state in the records table's rows, or outside the stack.
  inline: {
    pipelineName: "inline",
    delivery: "s3-direct",
    inputBucketRead: false,
    recordsTable: { keyAttribute: "id" },
    state: { kind: "inline" },
  },
  external: { pipelineName: "ext", delivery: "sqs", state: { kind: "external" } },
  kinesis: { pipelineName: "clicks", delivery: "kinesis" },
  streams: { pipelineName: "profiles", delivery: "dynamodb-streams", removal: "destroy" },
  // The outbox: its table and the relay on its stream (a FIFO pipeline's relay has a DLQ of its own).
  outbox: { pipelineName: "shop", delivery: "sqs", outbox: RELAY },
  outboxFifo: { pipelineName: "shopf", delivery: "sqs", fifo: true, outbox: RELAY, removal: "destroy" },
};

function appWith(configs: (keyof typeof CONFIGS)[], oneStack = false): App {
  const app = new App();
  const shared = oneStack ? new Stack(app, "Shared") : undefined;
  for (const name of configs) {
    const stack = shared ?? new Stack(app, `Nag-${name}`);
    new EffectivelyOncePipeline(stack, name, { ...INLINE, ...CONFIGS[name] } as EffectivelyOncePipelineProps);
  }
  return app;
}

type Finding = { rule: string; path: string; severity?: string };

function run(pack: NagPack, scope: IConstruct): Finding[] {
  return pack.validateScope(scope).violations.flatMap((v) =>
    v.violatingResources.map((r) => ({
      rule: v.ruleName,
      path: r.constructPath ?? "",
      severity: v.severity,
    })),
  );
}

/** What the packs would report without any acknowledgment. */
function raw(pack: NagPack, scope: IConstruct): Finding[] {
  const unsuppressed = pack as unknown as { isAcknowledged: () => boolean };
  unsuppressed.isAcknowledged = () => false;
  return run(pack, scope);
}

/** Every acknowledgment of a cdk-nag rule in the tree: construct path, rule id, reason. */
function acknowledgments(scope: IConstruct): { path: string; rule: string; reason: string }[] {
  const out: { path: string; rule: string; reason: string }[] = [];
  for (const c of scope.node.findAll()) {
    for (const m of c.node.metadata) {
      if (m.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(m.data as Record<string, string>)) {
        const rule = id.replace(/^annotation::/i, "");
        if (/^(AwsSolutions|Serverless)-/.test(rule)) out.push({ path: c.node.path, rule, reason });
      }
    }
  }
  return out;
}

const packs = (app: App) => [new AwsSolutionsChecks(app), new ServerlessChecks(app)];

describe("cdk-nag", () => {
  it.each(Object.keys(CONFIGS))("%s: no unacknowledged AwsSolutions or Serverless findings", (name) => {
    const app = appWith([name]);
    for (const pack of packs(app)) expect(run(pack, app)).toEqual([]);
  });

  it("two pipelines in one stack (shared CDK singletons): still none", () => {
    const app = appWith(["records", "images", "orders"], true);
    for (const pack of packs(app)) expect(run(pack, app)).toEqual([]);
  });

  it("every acknowledgment covers a real finding, and every finding is acknowledged, with a reason", () => {
    const app = appWith(Object.keys(CONFIGS));
    const findings = packs(app).flatMap((pack) => raw(pack, app));
    const acks = acknowledgments(app);
    expect(findings.length).toBeGreaterThan(0);
    const covers = (a: { path: string; rule: string }, f: Finding) =>
      a.rule === f.rule && (f.path === a.path || f.path.startsWith(`${a.path}/`));
    for (const f of findings)
      expect(
        acks.some((a) => covers(a, f)),
        `${f.rule} at ${f.path}`,
      ).toBe(true);
    for (const a of acks) {
      expect(
        findings.some((f) => covers(a, f)),
        `unneeded ${a.rule} at ${a.path}`,
      ).toBe(true);
      expect(a.reason.length, a.rule).toBeGreaterThan(40);
    }
    // The accepted findings, by rule: nothing else is ever acknowledged.
    expect([...new Set(acks.map((a) => a.rule.replace(/\[.*$/, "")))].sort()).toEqual([
      "AwsSolutions-IAM4", // CDK's bucket-notifications handler (AWSLambdaBasicExecutionRole)
      "AwsSolutions-IAM5", // object-level actions on the pipeline's own buckets (<bucket>/*)
      "AwsSolutions-S1", // server access logs are opt-in
      "AwsSolutions-SQS3", // the DLQ of async invokes has no DLQ
      "Serverless-LambdaDLQ", // on-failure destination instead of a function DLQ
      "Serverless-LambdaEventSourceMappingDestination", // SQS sources dead-letter by redrive
      "Serverless-LambdaTracing", // X-Ray off (cost)
      "Serverless-SQSRedrivePolicy", // the DLQ itself
    ]);
    for (const a of acks.filter((x) => x.rule.startsWith("AwsSolutions-IAM5"))) {
      // A bucket's own objects, or `*` for dynamodb:ListStreams alone (the DynamoDB stream's mapping).
      expect(a.rule).toMatch(/^AwsSolutions-IAM5\[Resource::(<\w+Bucket\w+\.Arn>\/(in\/)?)?\*\]$/);
    }
  });

  it("with an access-logs bucket there is no S1 to acknowledge", () => {
    const app = new App();
    const stack = new Stack(app, "Logs");
    const logs = s3.Bucket.fromBucketName(stack, "L", "access-logs");
    new EffectivelyOncePipeline(stack, "P", {
      ...INLINE,
      pipelineName: "p",
      delivery: "s3-sqs",
      accessLogsBucket: logs,
    });
    for (const pack of packs(app)) expect(run(pack, app)).toEqual([]);
    expect(acknowledgments(app).filter((a) => a.rule === "AwsSolutions-S1")).toEqual([]);
  });

  it("catches what it should (the checks can fail)", () => {
    const app = new App();
    const stack = new Stack(app, "Bad");
    new s3.Bucket(stack, "Bucket");
    new sqs.Queue(stack, "Queue", { encryption: sqs.QueueEncryption.UNENCRYPTED });
    const rules = run(new AwsSolutionsChecks(app), app).map((f) => f.rule);
    expect(rules).toEqual(
      expect.arrayContaining([
        "AwsSolutions-S1",
        "AwsSolutions-S10",
        "AwsSolutions-SQS2",
        "AwsSolutions-SQS3",
        "AwsSolutions-SQS4",
      ]),
    );
  });
});
