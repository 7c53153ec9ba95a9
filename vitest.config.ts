import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { ENGINE_MODES, ENGINES, MODE_NAMES, modeName } from "./src/engines/registry.js";
import { type StoreName, wantsStore } from "./test/kit/store-names.js";
// The test suite's own engines (the toy of test/engines/toy): in the lists below as the package's are.
import "./test/kit/test-engines.js";

/**
 * Two projects, one run:
 * - `unit` (`npm run test:unit`): no server, no CDK synth; under 30 s on 2 cores.
 * - `integration`: real protocol servers on 127.0.0.1 (one DynamoDB Local, PostgreSQL and Valkey for the whole run,
 *   started and stopped by test/global-setup.ts; s3rver and fauxqs in-process), CDK synth, the CLI, the demo, and the packed package installed
 *   into a new project (test/consumer.test.ts).
 * `npm test` runs both; the unit project also runs the type tests (test/types/*.test-d.ts: tsc, through vitest's
 * typecheck mode). EONCE_STORES=memory,dynamodb picks the engines of the store and guard suites.
 */
/** Suites that loop over test/kit/stores.ts's STORES: memory and SQLite in unit; DynamoDB Local and PostgreSQL in integration. */
const STORE_SUITES = [
  "test/core/guard.test.ts",
  "test/core/guard-faults.test.ts",
  "test/engines/contract.test.ts",
  "test/engines/outbox.test.ts",
];
/** PostgreSQL's suites outside its folder (the orders example, chaos, audit): run with the postgres store suites. */
const POSTGRES_SUITES = [
  "test/examples/orders-postgres.test.ts",
  "test/sim/postgres.test.ts",
  "test/audit/table-postgres.test.ts",
];
const wants = (store: StoreName) => wantsStore(process.env.EONCE_STORES, store);
/**
 * The engines behind a server (src/engines/registry.ts), in each of their modes (`dynamodb-inline` too): their store
 * suites run in the integration project.
 */
const SERVER_STORES = ENGINE_MODES.filter((e) => e.server).map(modeName);
/** The engines in this process: their store suites run in the unit project. */
const IN_PROCESS_STORES = MODE_NAMES.filter((n) => !SERVER_STORES.includes(n));
const wantsPostgres = wants("postgres") || wants("postgres-inline");
/**
 * A server engine's own suites, `test/engines/<folder>/` (src/engines/registry.ts): in the integration project when
 * one of the folder's engines is wanted; never in the unit project (they need the server).
 */
const SERVER_FOLDERS = [...new Set(ENGINES.filter((e) => e.server).map((e) => e.folder))];
const folderSuites = (folder: string) => `test/engines/${folder}/**/*.test.ts`;
const wantedFolders = SERVER_FOLDERS.filter((f) =>
  ENGINE_MODES.some((e) => e.folder === f && wants(modeName(e))),
);

const INTEGRATION = [
  // CDK synth (aws-cdk-lib alone takes seconds to import per file, esbuild bundling, CloudFormation validation).
  "test/cdk/**/*.test.ts",
  "test/bench.test.ts",
  // eonce audit template on the synthesized reference stacks (and the one spawned CLI run).
  "test/audit/reference-stacks.test.ts",
  // The fault simulator: tens of thousands of histories, exhaustive small cases, 500 on DynamoDB Local.
  "test/sim/**/*.test.ts",
  "test/cli/state.test.ts",
  "test/cli/local-start.test.ts",
  "test/consumer.test.ts",
  "test/docs/readme-starts.test.ts",
  "test/demo.test.ts",
  "test/demo-cli.test.ts",
  "test/lambda/bad-input.test.ts",
  "test/lambda/fifo-producer.test.ts",
  "test/lambda/streams.test.ts",
  "test/lambda/visibility-heartbeat.test.ts",
  "test/lambda/wrappers.test.ts",
  "test/local/run-command.test.ts",
  "test/local/run-durable.test.ts",
  "test/local/lambda-server.test.ts",
  "test/local/run-truth.test.ts",
  "test/local/run-unknown.test.ts",
  "test/local/s3-conditional.test.ts",
  "test/local/runtime.test.ts",
  "test/local/servers.test.ts",
  "test/local/stream-event-source.test.ts",
  "test/local/run-streams.test.ts",
  "test/local/run-payments.test.ts",
  "test/local/test-servers.test.ts",
  "test/local/run-local-state.test.ts",
  // eonce run on the test suite's toy engine (the rest of its tests run in unit).
  "test/engines/toy/run.test.ts",
  "test/local/sqs-event-source.test.ts",
  "test/examples/**/*.test.ts",
  // Durable functions on DynamoDB Local (the dispatcher's and the step effects' unit tests run in unit).
  "test/durable/dynamodb/**/*.test.ts",
  // Guarded steps' contract, looped over every engine (DynamoDB Local, PostgreSQL and Valkey behind servers).
  "test/durable/engines/**/*.test.ts",
  "test/sinks/fenced-rule.property.test.ts",
  "test/sinks/s3-fenced.test.ts",
  // The outbox's AWS sender on fauxqs (SQS and SNS).
  "test/outbox/aws-sender.test.ts",
  "test/audit/table.test.ts",
];

/**
 * EONCE_INTEGRATION_ONLY=<path>,… narrows the integration project to the files under these paths, the unit project
 * left whole: how .ci/run runs, on its other Node versions, the unit tier, the packed package and the durable suites
 * in one run (one set of servers; the unit files compute while the packed package waits on npm and tsc).
 */
const INTEGRATION_ONLY = process.env.EONCE_INTEGRATION_ONLY?.split(",").filter(Boolean);
const integrationOnly = (glob: string) =>
  !INTEGRATION_ONLY || INTEGRATION_ONLY.some((path) => glob === path || glob.startsWith(`${path}/`));

/**
 * The AWS SDK's once-per-process Node 22 notice, as the CLI silences it (src/cli/main.ts): noise in a test run. Set
 * here too for the main process, where the global setup creates SDK clients.
 */
const QUIET_SDK = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" };
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/**
 * The slowest files, longest first (as measured in a full run, docs/testing.md): started first, so that no long file
 * starts last and leaves a worker alone at the end. vitest's own order (the durations cached from the last run, else
 * file size) is missing on a fresh clone and, in a worktree, shared with other runs; the rest follow it. Within a
 * project only: a worker that changes project starts a new process and imports everything again, so the integration
 * files (the long ones) run first, then the unit files fill the tail.
 */
const SLOWEST = [
  "test/consumer.test.ts", // the packed package: npm install, tsc twice over every subpath, the CLI, the demo
  "test/local/run-command.test.ts", // 17 `eonce run`s, a DynamoDB Local without -sharedDb
  "test/demo.test.ts", // three scenarios × three seeds
  "test/local/run-streams.test.ts", // 6 `eonce run`s on Kinesis and DynamoDB streams
  "test/local/run-truth.test.ts", // 15 `eonce run`s
  "test/docs/readme-starts.test.ts", // the packed package again, the README's starts
  "test/durable/engines/workflow.test.ts", // LocalDurableTestRunner, 5 engines × 4 histories
  "test/examples/orders-chain.test.ts", // 6 runs of the orders demo, one after another
  "test/sim/exhaustive.test.ts",
  "test/sim/postgres.test.ts",
  "test/core/guard.test.ts",
  "test/local/run-unknown.test.ts",
  "test/sim/outbox.test.ts",
  "test/sim/inline.test.ts",
  "test/local/runtime.test.ts",
  "test/local/run-durable.test.ts",
  "test/cli/local-start.test.ts",
  "test/lambda/wrappers.test.ts", // SQS visibility timeouts of whole seconds, two forms
  "test/local/run-payments.test.ts",
  "test/audit/stream-stacks.test.ts",
  "test/audit/reference-stacks.test.ts",
  "test/core/guard-faults.test.ts", // leases and heartbeats on every engine, one after another
  "test/bench.test.ts",
  "test/engines/contract.test.ts",
  "test/lambda/visibility-heartbeat.test.ts",
  "test/local/run-local-state.test.ts",
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const project = (f: TestSpecification) => (f.project.name === "integration" ? 0 : 1);
    const rank = (f: TestSpecification) => {
      const i = SLOWEST.findIndex((name) => f.moduleId.endsWith(name));
      return i === -1 ? SLOWEST.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => project(a.f) - project(b.f) || rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2 cores: DynamoDB Local (Java) needs one of them. A third worker overlapped more of the integration files'
    // waiting (four of them: 54 s of wall time on 2 workers, 39 s on 4), but on a loaded machine it starved the
    // lease and deadline timers of the guard and wrapper suites (aborts 3–21 ms past their 100 ms bounds).
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: [
            ...INTEGRATION,
            ...POSTGRES_SUITES,
            ...SERVER_FOLDERS.map(folderSuites),
            ...(IN_PROCESS_STORES.some(wants) ? [] : STORE_SUITES),
          ],
          // SQLite needs no server: a database file per suite in a temp directory.
          env: { EONCE_PROJECT_STORES: IN_PROCESS_STORES.join(","), ...QUIET_SDK },
          // One module graph per worker, not per file: the AWS SDK, fast-check and the engines are imported once.
          // The unit files keep no module state between them (no vi.mock); on 2 cores this took the tier from 275 s
          // to 84 s of wall time (import 181 s → 28 s), on a loaded machine.
          isolate: false,
          // Type tests (test/**/*.test-d.ts): expectTypeOf and @ts-expect-error, checked by tsc; a regression fails.
          // Left to the machine's Node by .ci/run's other Node versions (EONCE_SKIP_TYPE_CHECKS=1): tsc's answer
          // does not depend on the Node that runs it.
          typecheck: {
            enabled: process.env.EONCE_SKIP_TYPE_CHECKS !== "1",
            include: ["test/**/*.test-d.ts"],
            tsconfig: "tsconfig.typetest.json",
          },
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: [
            ...INTEGRATION,
            ...(SERVER_STORES.some(wants) ? STORE_SUITES : []),
            ...(wantsPostgres ? POSTGRES_SUITES : []),
            ...wantedFolders.map(folderSuites),
          ].filter(integrationOnly),
          exclude: wantsPostgres ? [] : POSTGRES_SUITES,
          env: { EONCE_PROJECT_STORES: SERVER_STORES.join(","), ...QUIET_SDK },
          // Checks up front what the suite needs from the machine (Chromium, Java, a Valkey binary), then starts
          // DynamoDB Local, PostgreSQL and Valkey; each test file sees the last two as EONCE_POSTGRES_URL/EONCE_VALKEY_URL.
          globalSetup: ["test/global-setup.ts"],
          setupFiles: ["test/kit/server-env.ts"],
          // As in unit: modules imported once per worker (import time 490 s → 38 s of a loaded run, every test
          // passing). A file that changes process.env or a module's state puts it back in its own afterAll.
          isolate: false,
        },
      },
    ],
  },
});
