import { existsSync } from "node:fs";
import * as path from "node:path";
import { Duration } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import { ENV, ESBUILD_TARGET, RUNTIME } from "./constants.js";
import { copyCommands, nativeModuleDirs } from "./native-modules.js";
import type { EffectivelyOncePipeline } from "./pipeline.js";
import type { FunctionSource, ResolvedProps } from "./resolve-props.js";

/** The pipeline's function: its role and log group, the resources' names in its environment. */
export function createFunction(
  pipeline: EffectivelyOncePipeline,
  p: ResolvedProps,
  serviceName: string,
): lambda.Function {
  const common = {
    runtime: RUNTIME,
    architecture: p.architecture === "arm64" ? lambda.Architecture.ARM_64 : lambda.Architecture.X86_64,
    timeout: Duration.seconds(p.timeoutSeconds),
    memorySize: p.memoryMiB,
    role: pipeline.role,
    logGroup: pipeline.logGroup,
    environment: functionEnvironment(pipeline, p, serviceName),
    description: `effectively-once pipeline ${p.pipelineName} (${p.delivery})`,
  };
  const source = p.source;
  if (source.kind === "prebuilt") {
    return new nodejs.NodejsFunction(pipeline, "Function", {
      ...common,
      code: source.code,
      handler: source.handler,
    });
  }
  return new nodejs.NodejsFunction(pipeline, "Function", { ...common, ...bundled(source, p) });
}

function functionEnvironment(
  pipeline: EffectivelyOncePipeline,
  p: ResolvedProps,
  serviceName: string,
): Record<string, string> {
  const environment: Record<string, string> = {
    [ENV.stateTable]: pipeline.stateTable.tableName,
    [ENV.pipeline]: p.pipelineName,
    [ENV.serviceName]: serviceName,
    [ENV.metricsNamespace]: p.metricsNamespace,
    NODE_OPTIONS: "--enable-source-maps",
  };
  if (pipeline.recordsTable && p.recordsTable) {
    environment[p.recordsTable.environmentVariable] = pipeline.recordsTable.tableName;
  }
  if (pipeline.outputBucket) environment[ENV.outputBucket] = pipeline.outputBucket.bucketName;
  if (pipeline.inputBucket) environment[ENV.inputBucket] = pipeline.inputBucket.bucketName;
  // The user's variables last: they may override any of the above.
  return { ...environment, ...p.environment };
}

/** The entry, bundled by the local esbuild into one ES module, native modules copied beside it. */
function bundled(
  source: Extract<FunctionSource, { kind: "bundle" }>,
  p: ResolvedProps,
): nodejs.NodejsFunctionProps {
  const entry = path.resolve(source.entry);
  const depsLockFilePath = findLockFile(source.projectRoot ?? path.dirname(entry));
  const projectRoot = path.dirname(depsLockFilePath);
  const nativeModules = [...source.nativeModules];
  const nativeDirs = nativeModuleDirs(projectRoot, nativeModules, p.architecture);
  return {
    entry,
    handler: source.handler,
    projectRoot,
    depsLockFilePath,
    bundling: {
      // The local esbuild, never Docker: synth must work on machines without a container engine.
      forceDockerBundling: false,
      format: nodejs.OutputFormat.ESM,
      target: ESBUILD_TARGET,
      mainFields: ["module", "main"],
      minify: true,
      sourceMap: true,
      // Bundle the SDK rather than use the runtime's: the store depends on its exact error shapes
      // (ConditionalCheckFailedException.Item, CancellationReasons), tested with the pinned version.
      bundleAwsSDK: true,
      externalModules: nativeModules,
      commandHooks: {
        beforeBundling: () => [],
        beforeInstall: () => [],
        afterBundling: (_input: string, output: string) => copyCommands(projectRoot, nativeDirs, output),
      },
      // CommonJS dependencies bundled into an ES module still call require() for Node built-ins.
      banner:
        "import { createRequire as __eonceCreateRequire } from 'node:module'; " +
        "const require = __eonceCreateRequire(import.meta.url);",
    },
  };
}

/** The nearest package-lock.json from `dir` upwards: esbuild resolves the handler's imports from there. */
function findLockFile(dir: string): string {
  let current = path.resolve(dir);
  for (;;) {
    const candidate = path.join(current, "package-lock.json");
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(current);
    if (parent === current) {
      throw new Error(`EffectivelyOncePipeline: no package-lock.json above ${dir}; set projectRoot`);
    }
    current = parent;
  }
}
