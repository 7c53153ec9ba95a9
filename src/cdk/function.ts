import { existsSync } from "node:fs";
import * as path from "node:path";
import { Duration, Tags } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import { ENV, ESBUILD_TARGET, RUNTIME } from "./constants.js";
import { copyCommands, nativeModuleDirs } from "./native-modules.js";
import type { PipelineParts } from "./pipeline-parts.js";
import type { FunctionSource, ResolvedProps } from "./resolve-props.js";
import { STATE_TAG } from "./state-kinds.js";

/** The pipeline's function: its role and log group, the resources' names in its environment. */
export function createFunction(
  pipeline: PipelineParts,
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
  const fn =
    source.kind === "prebuilt"
      ? new nodejs.NodejsFunction(pipeline, "Function", {
          ...common,
          code: source.code,
          handler: source.handler,
        })
      : new nodejs.NodejsFunction(pipeline, "Function", { ...common, ...bundled(source, p) });
  // Says where the state is to `eonce audit template`, which sees no state table in the stack.
  if (p.state.kind !== "table") Tags.of(fn).add(STATE_TAG, p.state.kind);
  return fn;
}

function functionEnvironment(
  pipeline: PipelineParts,
  p: ResolvedProps,
  serviceName: string,
): Record<string, string> {
  const environment: Record<string, string> = {
    ...stateEnvironment(pipeline, p),
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

/** Where the guard's state is: the state table, or the kind (and for inline state, its table and hash key). */
function stateEnvironment(pipeline: PipelineParts, p: ResolvedProps): Record<string, string> {
  const state = p.state;
  switch (state.kind) {
    case "table":
      return { [ENV.stateTable]: required(pipeline.stateTable, "state table").tableName };
    case "inline":
      return {
        [ENV.state]: state.kind,
        [ENV.inlineStateTable]: required(state.table ?? pipeline.recordsTable, "inline state's table")
          .tableName,
        [ENV.inlineStateKeyAttribute]: state.keyAttribute,
      };
    case "external":
      return { [ENV.state]: state.kind };
  }
}

/** A resource the construct made before the function (resolveProps guarantees it). */
function required<T>(resource: T | undefined, what: string): T {
  if (resource === undefined) throw new Error(`EffectivelyOncePipeline: the ${what} is missing`);
  return resource;
}

/** The entry, bundled by the local esbuild into one ES module, native modules copied beside it (the outbox relay too). */
export function bundled(
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
