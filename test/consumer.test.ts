import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { packedProject, scratchRoot, sh as shell } from "../scripts/packed-project.mjs";
import { createStateTable, createTableIfMissing } from "../src/engines/dynamodb/schema.js";
import type { InvocationReport } from "../src/lambda/invocation.js";
import { dynamoDBClient } from "../src/local/emulators/dynamodb-local.js";

/**
 * The package as users get it: `npm pack`, the tarball installed into a new project (with the optional peers the
 * local runtime needs, from the registry this machine reaches or npm's cache), then what the README tells them to
 * do there: type-check against every public subpath (NodeNext and bundler resolution), bundle a Lambda handler with
 * the documented esbuild recipe and run it against DynamoDB Local, and use the `eonce` CLI.
 */
const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
  version: string;
  exports: Record<string, unknown>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
let dir: string;
let project: string;
let files: string[];

// A user's environment: without the test run's switch for the SDK's Node 22 notice (vitest.config.ts), so that the
// installed CLI is seen silencing it itself.
const { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: _quiet, ...userEnv } = process.env;

const sh = (cmd: string, args: string[], env: Record<string, string> = {}) =>
  shell(cmd, args, { cwd: project, env: { ...userEnv, NO_COLOR: "1", ...env } });

const eonce = (args: string[], env: Record<string, string> = {}) =>
  sh(join(project, "node_modules/.bin/eonce"), args, env);

const HANDLER = `import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBFencedSink, DynamoDBStore } from "effectively-once";
import { s3Handler } from "effectively-once/lambda";

const client = new DynamoDBClient({});
const store = new DynamoDBStore({ client, tableName: process.env.STATE_TABLE! });
const index = new DynamoDBFencedSink({ client, tableName: process.env.INDEX_TABLE! });

export const handler = s3Handler(
  async (event, ctx) => {
    if (event.kind !== "s3") return;
    index.putAtCommit(ctx, { pk: event.subject, sequencer: event.sequencer ?? "", size: event.size ?? 0 });
    return { indexed: event.key };
  },
  { store, pipeline: "consumer", leaseMs: 5_000 },
);
`;

// Every public subpath, each used as a value and as a type, so that resolution and declarations are both checked.
const EVERY_SUBPATH = `import type { S3Event, SQSEvent } from "aws-lambda";
import * as root from "effectively-once";
import type { GuardOutcome, S3ObjectEvent, StateStore } from "effectively-once";
import * as cdk from "effectively-once/cdk";
import type { EffectivelyOncePipelineProps } from "effectively-once/cdk";
import * as core from "effectively-once/core";
import * as lambda from "effectively-once/lambda";
import type { EffectivelyOnceOptions, HandlerContext } from "effectively-once/lambda";
import * as middy from "effectively-once/lambda/middy";
import * as local from "effectively-once/local";
import type { LocalRuntimeOptions } from "effectively-once/local";
import * as observe from "effectively-once/observe";
import * as outbox from "effectively-once/outbox";
import type { OutboxEntry, OutboxSender } from "effectively-once/outbox";
import * as dynamodb from "effectively-once/engines/dynamodb";
import * as memory from "effectively-once/engines/memory";
import * as postgres from "effectively-once/engines/postgres";
import * as sqlite from "effectively-once/engines/sqlite";
import * as valkey from "effectively-once/engines/valkey";
import type { ValkeyStoreOptions } from "effectively-once/engines/valkey";
import * as sinks from "effectively-once/sinks/dynamodb";
import * as sources from "effectively-once/sources";
import type { DeliveryUnit } from "effectively-once/sources";
// The 0.x subpaths, deprecated aliases of the engines' (CHANGELOG.md): they must still resolve.
import * as oldDynamodb from "effectively-once/stores/dynamodb";
import * as oldMemory from "effectively-once/stores/memory";
import * as oldPostgres from "effectively-once/stores/postgres";
import * as oldSqlite from "effectively-once/stores/sqlite";
import { handler } from "./handler.js";

const store: StateStore = new memory.MemoryStore();
const guard = core.createGuard({ store, leaseMs: 1_000 });
export const outcome: Promise<GuardOutcome<number>> = guard.run(
  { subject: "b/k", identity: "1:created", position: root.positionFromNumber(1) },
  async () => 1,
);
export const units: DeliveryUnit[] = sources.parseInvocation({ Records: [] } satisfies S3Event);
export const sqs = lambda.sqsHandler(async (e: S3ObjectEvent | unknown, ctx: HandlerContext) => ctx.attempt, {
  store,
} satisfies EffectivelyOnceOptions);
export const sqsEvent: SQSEvent = { Records: [] };
export const props: Partial<EffectivelyOncePipelineProps> = { pipelineName: "p" };
export const runtime: LocalRuntimeOptions = { seed: 1 };
export const sender: OutboxSender = outbox.awsOutboxSender();
export const pending: OutboxEntry[] = [];
export const valkeyOptions: Partial<ValkeyStoreOptions> = { keyPrefix: "app:" };
export const values = [
  root.createGuard,
  cdk.EffectivelyOncePipeline,
  middy.effectivelyOnce,
  local.LocalRuntime,
  observe.Observer,
  outbox.relayOutbox,
  sinks.DynamoDBFencedSink,
  dynamodb.DynamoDBStore,
  postgres.PostgresStore,
  sqlite.SqliteStore,
  valkey.ValkeyStore,
  oldDynamodb.DynamoDBStore === dynamodb.DynamoDBStore,
  oldMemory.MemoryStore === memory.MemoryStore,
  oldPostgres.PostgresStore === postgres.PostgresStore,
  oldSqlite.SqliteStore === sqlite.SqliteStore,
  handler,
];
`;

const RUN_BUNDLE = `import { handler } from "./out/handler.mjs";
const record = (sequencer) => ({
  eventVersion: "2.1",
  eventSource: "aws:s3",
  awsRegion: "us-east-1",
  eventTime: "2026-01-01T00:00:00.000Z",
  eventName: "ObjectCreated:Put",
  userIdentity: { principalId: "A" },
  requestParameters: { sourceIPAddress: "127.0.0.1" },
  responseElements: { "x-amz-request-id": "R" + sequencer, "x-amz-id-2": "I" },
  s3: {
    s3SchemaVersion: "1.0",
    configurationId: "c",
    bucket: { name: "in", ownerIdentity: { principalId: "A" }, arn: "arn:aws:s3:::in" },
    object: { key: "photo.png", size: 3, eTag: "e", sequencer },
  },
});
const context = {
  functionName: "consumer", awsRequestId: "r", getRemainingTimeInMillis: () => 30_000,
  invokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:consumer",
};
const out = [];
for (const seq of ["0A", "0A", "09"]) out.push(await handler({ Records: [record(seq)] }, context));
console.log(JSON.stringify(out));
`;

const tsconfig = (resolution: "NodeNext" | "bundler") =>
  JSON.stringify({
    compilerOptions: {
      target: "ES2022",
      module: resolution === "NodeNext" ? "NodeNext" : "ESNext",
      moduleResolution: resolution,
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ["node"],
    },
    files: ["handler.ts", "every-subpath.ts"],
  });

beforeAll(async () => {
  dir = await mkdtemp(join(await scratchRoot(), "eonce-consumer-"));
  // The README's install lines: the local runtime's optional peers and the project's own tools (while the
  // package is packed: `npm pack` runs the build first, as publishing does), then the library from the tarball.
  const d = pkg.devDependencies;
  const installed = await packedProject({
    root,
    dir,
    env: userEnv,
    files: {
      "handler.ts": HANDLER,
      "every-subpath.ts": EVERY_SUBPATH,
      "run-bundle.mjs": RUN_BUNDLE,
      "tsconfig.nodenext.json": tsconfig("NodeNext"),
      "tsconfig.bundler.json": tsconfig("bundler"),
    },
    packages: [
      "s3rver",
      "amplify-dynamodb-simulator",
      "fauxqs@1.9.2",
      "tsx",
      `typescript@${d.typescript}`,
      `esbuild@${d.esbuild}`,
      `@types/node@${d["@types/node"]}`,
      `aws-cdk-lib@${d["aws-cdk-lib"]}`,
      `constructs@${d.constructs}`,
      `pg@${d.pg}`,
      `@types/pg@${d["@types/pg"]}`,
      `ioredis@${d.ioredis}`,
    ],
  });
  project = installed.project;
  files = installed.files;
}, 600_000);

/** Whether `version` is in `range`: only the forms `engines` uses here (`^x.y.z`, `>=x.y.z`, joined by `||`). */
function satisfies(version: string, range: string): boolean {
  const parse = (v: string) => v.split(".").map(Number) as [number, number, number];
  const cmp = (a: number[], b: number[]) => a.reduce((c, x, i) => c || x - (b[i] ?? 0), 0);
  const v = parse(version);
  return range.split("||").some((part) => {
    const m = /^\s*(\^|>=)(\d+\.\d+\.\d+)\s*$/.exec(part);
    if (!m) throw new Error(`engines: cannot read ${JSON.stringify(part)}`);
    const min = parse(m[2] as string);
    return cmp(v, min) >= 0 && (m[1] === ">=" || v[0] === min[0]);
  });
}

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

// Side by side: most of these wait on a child process (tsc, the CLI, DynamoDB Local's JVM).
describe.concurrent("the packed package", () => {
  it("ships dist (with the demo's examples), the docs, README and LICENSE; no source maps, no tests", () => {
    expect(files).toContain("LICENSE");
    expect(files).toContain("README.md");
    expect(files).toContain("dist/cli/main.js");
    expect(files).toContain("dist/examples/records/scenario.js");
    expect(files).toContain("docs/local-runtime.md");
    expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
    expect(files.filter((f) => /^(src|test|examples)\//.test(f))).toEqual([]);
  });

  it("declares @types/aws-lambda (used in its public types) as a dependency", async () => {
    const installed = JSON.parse(
      await readFile(join(project, "node_modules/effectively-once/package.json"), "utf8"),
    ) as { dependencies: Record<string, string> };
    expect(Object.keys(installed.dependencies)).toContain("@types/aws-lambda");
  });

  it("runs no script when installed (npm 11 asks users to allow each one), and its engines cover this Node", async () => {
    const installed = JSON.parse(
      await readFile(join(project, "node_modules/effectively-once/package.json"), "utf8"),
    ) as { scripts?: Record<string, string>; engines: { node: string } };
    const atInstall = ["preinstall", "install", "postinstall", "prepare"];
    expect(Object.keys(installed.scripts ?? {}).filter((s) => atInstall.includes(s))).toEqual([]);
    // CI runs this file on Node 20, 22 and 24 (scripts/with-node.mjs; docs/decisions/0009-node-versions.md).
    expect(satisfies(process.versions.node, installed.engines.node), installed.engines.node).toBe(true);
  });

  // What tsc says of the package's types does not depend on the Node running it: .ci/run's other Node versions
  // (EONCE_SKIP_TYPE_CHECKS) leave these two to the machine's Node.
  for (const resolution of ["nodenext", "bundler"] as const) {
    it.skipIf(process.env.EONCE_SKIP_TYPE_CHECKS === "1")(
      `type-checks a handler importing every public subpath (moduleResolution ${resolution})`,
      async () => {
        const r = await sh(join(project, "node_modules/.bin/tsc"), ["-p", `tsconfig.${resolution}.json`]);
        expect(r.stdout + r.stderr).toBe("");
        expect(r.code).toBe(0);
      },
      180_000,
    );
  }

  it("bundles with the documented esbuild recipe and runs: the first AWS call works, duplicates and stale skip", async () => {
    // The README's recipe (docs: "Bundle a handler").
    const build = await sh(join(project, "node_modules/.bin/esbuild"), [
      "handler.ts",
      "--bundle",
      "--platform=node",
      "--format=esm",
      "--target=node20",
      "--main-fields=module,main",
      "--outfile=out/handler.mjs",
    ]);
    expect(build.code, build.stderr).toBe(0);
    const endpoint = inject("dynamodbEndpoint");
    const client = dynamoDBClient(endpoint);
    const t = randomUUID().slice(0, 8);
    await createStateTable(client, { tableName: `state-${t}` });
    await createTableIfMissing(client, `index-${t}`, "pk");
    client.destroy();
    const r = await sh(process.execPath, ["run-bundle.mjs"], {
      STATE_TABLE: `state-${t}`,
      INDEX_TABLE: `index-${t}`,
      AWS_ENDPOINT_URL_DYNAMODB: endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
      POWERTOOLS_METRICS_DISABLED: "true",
      POWERTOOLS_LOG_LEVEL: "SILENT",
    });
    expect(r.stderr).not.toMatch(/Dynamic require/);
    expect(r.code, r.stderr).toBe(0);
    const reports = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "[]") as InvocationReport[];
    const events = reports.map((x) => x.deliveries.flatMap((d) => d.events));
    expect(events.map((e) => e.map((x) => x.status))).toEqual([["processed"], ["duplicate"], ["stale"]]);
    // The duplicate gets the stored result of the first run.
    expect(events[1]?.[0]?.result).toEqual({ indexed: "photo.png" });
  }, 120_000);

  it("npx eonce --version prints the package's version", async () => {
    const r = await sh("npx", ["--no-install", "eonce", "--version"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  }, 60_000);

  it("eonce inspect prints the normalized event", async () => {
    const r = await eonce(["inspect", join(root, "test/fixtures/events/s3-put.json")]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toMatchObject({ kind: "s3", key: "HappyFace.jpg" });
  }, 60_000);

  it("eonce run loads a TypeScript handler (tsx registered on demand), with no SDK warning", async () => {
    const t = randomUUID().slice(0, 8);
    const r = await eonce([
      "run",
      "handler.ts:handler",
      "--generate",
      "6",
      "--table",
      `index-${t}`,
      "--env",
      `INDEX_TABLE=index-${t}`,
      "--state-table",
      `state-${t}`,
      "--duplicate-rate",
      "0.5",
      "--json",
      "--dynamodb-endpoint",
      inject("dynamodbEndpoint"),
    ]);
    expect(r.stderr).not.toMatch(/Unknown file extension|NodeDeprecationWarning|upgrade to node/);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}") as {
      events: number;
      outcomes: Record<string, number>;
      invariants: { status: string }[];
    };
    expect(report.events).toBe(6);
    expect(report.outcomes.processed).toBe(6);
    expect(report.invariants.map((i) => i.status)).not.toContain("fail");
  }, 180_000);

  it("eonce demo --scenario records --scale 0.2 --json runs from the installed package, DynamoDB Local included", async () => {
    const r = await eonce(["demo", "--scenario", "records", "--scale", "0.2", "--json", "--seed", "4"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/upgrade to node/);
    const out = JSON.parse(r.stdout) as { scenarios: Record<string, unknown>[] };
    expect(Object.keys(out)).toEqual(["scenarios"]);
    expect(out.scenarios.map((s) => `${s.name}/${s.guard}`)).toEqual(["records/off", "records/on"]);
    for (const s of out.scenarios) {
      expect(Object.keys(s)).toEqual([
        "name",
        "guard",
        "deliveries",
        "distinctEvents",
        "handlerRuns",
        "duplicateEffects",
        "staleResults",
        "lostEvents",
        "durationMs",
      ]);
      for (const k of Object.keys(s).slice(2)) expect(Number.isInteger(s[k])).toBe(true);
    }
    expect(out.scenarios[1]).toMatchObject({ duplicateEffects: 0, staleResults: 0, lostEvents: 0 });
    expect(r.stderr).toMatch(/wall time \d+\.\d s, seed 4/);
  }, 240_000);
});
