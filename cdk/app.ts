/**
 * The three reference pipelines on AWS, one stack each:
 *
 *   EffectivelyOnce-Records  S3 → Lambda (direct async invoke) → DynamoDB (one row per upload, exactly once)
 *   EffectivelyOnce-Images   S3 → EventBridge → Lambda → output bucket (ordered per key, fenced writes)
 *   EffectivelyOnce-Orders   SQS → Lambda → DynamoDB (one charge per order id, exactly once)
 *
 * `npm run synth` (or `npx cdk synth`) writes cdk.out offline: no AWS credentials, no account or region
 * lookups (the stacks are environment-agnostic), the handlers bundled by the local esbuild. cdk-nag's
 * AwsSolutions and Serverless packs and CDK's template validation run on every synth and fail it on any
 * unacknowledged finding.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { App, Aws, CfnOutput, Stack, type StackProps, Tags, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import type { Construct } from "constructs";
import {
  type Architecture,
  EffectivelyOncePipeline,
  type EffectivelyOncePipelineProps,
  VISIBILITY_TIMEOUT_FACTOR,
} from "../src/cdk/index.js";
import { nativeModuleDirs } from "../src/cdk/native-modules.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const example = (name: string) => path.join(root, "examples", name, "lambda.ts");

/** One stack holding one pipeline, with the names a user needs as outputs. */
class PipelineStack extends Stack {
  readonly pipeline: EffectivelyOncePipeline;

  constructor(scope: Construct, id: string, props: StackProps & { pipeline: EffectivelyOncePipelineProps }) {
    const { pipeline, ...stackProps } = props;
    super(scope, id, stackProps);
    const p = new EffectivelyOncePipeline(this, "Pipeline", pipeline);
    this.pipeline = p;
    const out = (name: string, value: string | undefined, description: string) => {
      if (value !== undefined) new CfnOutput(this, name, { value, description });
    };
    out("InputBucket", p.inputBucket?.bucketName, "Upload objects here");
    out("OutputBucket", p.outputBucket?.bucketName, "Results are written here");
    out("QueueUrl", p.queue?.queueUrl, "Send messages here");
    out("StateTable", p.stateTable?.tableName, "The guard's state (one item per subject)");
    out("RecordsTable", p.recordsTable?.tableName, "The pipeline's results");
    out("DeadLetterQueueUrl", p.deadLetterQueue.queueUrl, "Deliveries that exhausted their retries");
    out("FunctionName", p.function.functionName, "The handler");
    out("LogGroup", p.logGroup.logGroupName, "The handler's logs (JSON lines, Logs Insights)");
    if (p.dashboard) {
      out(
        "Dashboard",
        `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${p.dashboard.dashboardName}`,
        "Metrics: processed, duplicate, stale, superseded, receive count",
      );
    }
  }
}

/**
 * The images handler uses sharp (native code). Its binaries come from node_modules, so the function's
 * architecture is the one they were installed for: ARM64 when the linux-arm64 binaries are installed,
 * otherwise x86_64 (what `npm ci` installs on a linux-x64 machine). Override with -c imagesArchitecture=….
 */
function imagesArchitecture(app: App): Architecture {
  const asked = app.node.tryGetContext("imagesArchitecture") as Architecture | undefined;
  if (asked) return asked;
  try {
    nativeModuleDirs(root, ["sharp"], "arm64");
    return "arm64";
  } catch {
    return "x86_64";
  }
}

export function buildApp(
  app = new App({ outdir: process.env.CDK_OUTDIR ?? path.join(root, "cdk.out") }),
): App {
  // CDK's template validation reports its findings as warnings by default: make them errors, and fail on them.
  app.node.setContext("@aws-cdk/core:validateAgainstDefaultRules", true);
  app.node.setContext("@aws-cdk/core:strictCfnValidateErrors", true);
  const removal = app.node.tryGetContext("removal") === "destroy" ? "destroy" : "retain";
  const common = { removal, projectRoot: root } as const;

  new PipelineStack(app, "EffectivelyOnce-Records", {
    description: "effectively-once reference pipeline: S3 → Lambda → DynamoDB (records)",
    pipeline: {
      ...common,
      pipelineName: "records",
      delivery: "s3-direct",
      entry: example("records"),
      // The handler writes rows from the event's metadata: it never reads the objects.
      inputBucketRead: false,
      recordsTable: { keyAttribute: "id", environmentVariable: "RECORDS_TABLE" },
    },
  });

  new PipelineStack(app, "EffectivelyOnce-Images", {
    description: "effectively-once reference pipeline: S3 → EventBridge → Lambda → S3 (images)",
    pipeline: {
      ...common,
      pipelineName: "images",
      delivery: "s3-eventbridge",
      entry: example("images"),
      memoryMiB: 1024,
      architecture: imagesArchitecture(app),
      nativeModules: ["sharp"],
      outputBucket: true,
      // The fenced output HEADs the current object (s3:GetObject) before its conditional PUT.
      outputBucketRead: true,
    },
  });

  const ordersTimeoutSeconds = 30;
  new PipelineStack(app, "EffectivelyOnce-Orders", {
    description: "effectively-once reference pipeline: SQS → Lambda → DynamoDB (orders)",
    pipeline: {
      ...common,
      pipelineName: "orders",
      delivery: "sqs",
      entry: example("orders"),
      timeoutSeconds: ordersTimeoutSeconds,
      recordsTable: { keyAttribute: "chargeId", environmentVariable: "CHARGES_TABLE" },
      environment: {
        // A heartbeat must never shorten the queue's visibility timeout (6 × the function timeout).
        HEARTBEAT_VISIBILITY_S: String(VISIBILITY_TIMEOUT_FACTOR * ordersTimeoutSeconds),
        HEARTBEAT_INTERVAL_S: String(2 * ordersTimeoutSeconds),
      },
    },
  });

  Tags.of(app).add("project", "effectively-once");
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  return app;
}

// Run as a program (`tsx cdk/app.ts`, or the CDK CLI through cdk.json), not when a test imports it.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const assembly = buildApp().synth({ validateOnSynthesis: true });
  const stacks = assembly.stacks.map((s) => s.stackName).join(", ");
  console.error(`synthesized ${stacks} into ${assembly.directory} in ${Date.now() - started} ms`);
}
