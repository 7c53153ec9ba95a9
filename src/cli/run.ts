import { type Command, InvalidArgumentError, Option } from "commander";
import { localPackagesFor, requireLocalPackages } from "../local/emulators/requirements.js";
import type { FaultOptions } from "../local/sim/faults.js";
import { exitSoon, oneLine } from "./errors.js";
import { isTypeScriptHandler } from "./run/load-handler.js";
import { formatRunReport, RUN_SOURCES, type RunSource, runHandler } from "./run/run-handler.js";

interface RunCliOptions {
  source: RunSource;
  from?: string;
  generate?: number;
  messages?: string;
  fifo?: boolean;
  reupload?: number;
  bucket?: string;
  table?: { name: string; hashKey: string }[];
  stateTable?: string;
  outputBucket?: string;
  effects?: { table: string; attribute: string };
  env?: Record<string, string>;
  timeoutMs?: number;
  concurrency?: number;
  batchSize?: number;
  visibilityTimeoutS?: number;
  maxReceiveCount?: number;
  seed: number;
  duplicateRate?: number;
  reorderWindowMs?: number;
  failBeforeRate?: number;
  failAfterRate?: number;
  slowRate?: number;
  slowMs?: number;
  crashRate?: number;
  faultyAttempts?: number;
  logs?: boolean;
  json?: boolean;
  dynamodbEndpoint?: string;
}

/**
 * `eonce run <path:export>`: the user's own handler on the local runtime, with a chosen source and
 * faults, and a report of outcomes and invariant checks. Exits 1 if an invariant check fails or an event
 * never got through, 2 on bad usage or a start-up error (one line on stderr).
 */
export function registerRun(program: Command): void {
  program
    .command("run")
    .description(
      "run your Lambda handler locally against S3 uploads or replayed messages, with faults, and check the invariants",
    )
    .argument("<handler>", "module and export, like a Lambda handler setting: path/to/module.ts:handler")
    .addOption(
      new Option("--source <source>", "how events reach the handler")
        .choices([...RUN_SOURCES])
        .default("direct"),
    )
    .option("--from <folder>", "upload every file under this folder")
    .option("--generate <n>", "upload n generated objects (default 10)", count)
    .option(
      "--messages <file|folder>",
      "replay messages: JSONL (a body or {body, groupId, dedupId, attributes} a line) or a folder (a file a body)",
    )
    .option("--fifo", "messages through a FIFO queue (every message needs a groupId)")
    .option("--reupload <n>", "then upload n of the keys again (new events of the same keys)", count)
    .option("--bucket <name>", "input bucket (default eonce-input)")
    .option("--table <name[:hashKey]>", "create a DynamoDB table (repeatable; hash key default pk)", table)
    .option("--state-table <name>", "create a guard state table, set STATE_TABLE, check I2/I3 in it")
    .option("--output-bucket <name>", "create an output bucket and set OUTPUT_BUCKET")
    .option(
      "--effects <table:attribute>",
      "rows of this table hold their event's sequencer in attribute (I1)",
      effects,
    )
    .option("--env <KEY=VALUE>", "environment variable for the handler (repeatable)", envPair)
    .option("--timeout-ms <ms>", "function timeout (default 3000)", count)
    .option("--concurrency <n>", "function concurrency (default 10)", count)
    .option("--batch-size <n>", "SQS batch size (default 10)", count)
    .option("--visibility-timeout-s <s>", "SQS visibility timeout (default 30)", count)
    .option("--max-receive-count <n>", "SQS receives before the dead-letter queue (default 5)", count)
    .option("--seed <n>", "seed of every injected fault", integer, 1)
    .option("--duplicate-rate <p>", "share of deliveries sent twice", rate)
    .option("--reorder-window-ms <ms>", "hold each delivery back by up to this long", count)
    .option("--fail-before-rate <p>", "share of runs failing before the handler runs", rate)
    .option("--fail-after-rate <p>", "share of runs failing after the handler returned", rate)
    .option("--slow-rate <p>", "share of runs pausing --slow-ms at the handler's fault point", rate)
    .option("--slow-ms <ms>", "length of a slow run's pause", count)
    .option("--crash-rate <p>", "share of runs crashing at the fault point", rate)
    .option("--faulty-attempts <n>", "faults hit only the first n attempts of a delivery (default 1)", count)
    .option("--logs", "let the handler's Powertools logs and metrics through")
    .option("--json", "print the report as JSON")
    .option("--dynamodb-endpoint <url>", "use this running DynamoDB Local instead of starting one")
    .action(async (handler: string, options: RunCliOptions) => {
      // The SDK warns once per process that its 2027 releases need Node 22; in the report it is noise.
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
      try {
        process.exitCode = await run(handler, options);
      } catch (error) {
        process.stderr.write(`eonce run: ${oneLine(error)}\n`);
        process.exitCode = 2;
        exitSoon();
      }
    });
}

async function run(handler: string, options: RunCliOptions): Promise<number> {
  const faults: FaultOptions = {};
  const pick = <K extends keyof FaultOptions>(k: K, v: FaultOptions[K] | undefined) => {
    if (v !== undefined) faults[k] = v;
  };
  pick("duplicateRate", options.duplicateRate);
  pick("reorderWindowMs", options.reorderWindowMs);
  pick("failBeforeRate", options.failBeforeRate);
  pick("failAfterRate", options.failAfterRate);
  pick("slowRate", options.slowRate);
  pick("slowMs", options.slowMs);
  pick("crashRate", options.crashRate);
  pick("faultyAttempts", options.faultyAttempts);
  // Every missing optional package at once, with one install line, before any server starts.
  requireLocalPackages(
    localPackagesFor({
      dynamodbEndpoint: options.dynamodbEndpoint,
      typescript: isTypeScriptHandler(handler),
    }),
  );
  const report = await runHandler({
    handler,
    source: options.source,
    from: options.from,
    generate: options.generate,
    messages: options.messages,
    fifo: options.fifo,
    reuploads: options.reupload,
    bucket: options.bucket,
    tables: options.table,
    stateTable: options.stateTable,
    outputBucket: options.outputBucket,
    effects: options.effects,
    env: options.env,
    timeoutMs: options.timeoutMs,
    concurrency: options.concurrency,
    batchSize: options.batchSize,
    visibilityTimeoutS: options.visibilityTimeoutS,
    maxReceiveCount: options.maxReceiveCount,
    seed: options.seed,
    faults,
    logs: options.logs,
    handleSignals: true,
    ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
  });
  process.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatRunReport(report)}\n`);
  return report.ok ? 0 : 1;
}

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError("expected an integer");
  return n;
}

function count(value: string): number {
  const n = integer(value);
  if (n < 0) throw new InvalidArgumentError("expected a non-negative integer");
  return n;
}

function rate(value: string): number {
  const n = Number(value);
  if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError("expected a share between 0 and 1");
  return n;
}

function table(value: string, previous: { name: string; hashKey: string }[] | undefined) {
  const [name, hashKey = "pk"] = value.split(":");
  if (!name) throw new InvalidArgumentError("expected <name>[:<hashKey>]");
  return [...(previous ?? []), { name, hashKey }];
}

function effects(value: string): { table: string; attribute: string } {
  const [name, attribute] = value.split(":");
  if (!name || !attribute) throw new InvalidArgumentError("expected <table>:<attribute>");
  return { table: name, attribute };
}

function envPair(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new InvalidArgumentError("expected KEY=VALUE");
  return { ...(previous ?? {}), [value.slice(0, eq)]: value.slice(eq + 1) };
}
