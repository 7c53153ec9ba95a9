import { writeFile } from "node:fs/promises";
import { type Command, InvalidArgumentError } from "commander";
import { pickFields } from "../core/options.js";
import { engine } from "../engines/registry.js";
import { localPackagesFor, requireLocalPackages } from "../local/emulators/requirements.js";
import { LOCAL_RUNTIME_OPTIONS, LocalRuntime } from "../local/runtime.js";
import { loadScenarios } from "./demo/load-scenarios.js";
import { progressBar } from "./demo/progress.js";
import { renderHtmlReport } from "./demo/report-html.js";
import { runDemo, toJson } from "./demo/run-demo.js";
import type { Scenario } from "./demo/scenario.js";
import {
  DEMO_STATE_STORES,
  type DemoStateStoreKind,
  type DemoStates,
  openDemoStates,
} from "./demo/state-stores.js";
import { formatTable } from "./demo/table.js";
import { exitSoon, oneLine } from "./errors.js";
import { addSchemaOptions } from "./options.js";

interface DemoOptions {
  json?: boolean;
  report?: string;
  seed: number;
  scenario?: string[];
  scale: number;
  dynamodbEndpoint?: string;
  stateStore: DemoStateStoreKind;
}

/** The flags `eonce demo` shares with `eonce run`: the runtime's. */
const RUNTIME_FLAGS = pickFields(LOCAL_RUNTIME_OPTIONS, ["seed", "dynamodbEndpoint"]);

/**
 * `eonce demo`: the three reference pipelines on a local AWS (DynamoDB Local, s3rver, fauxqs on
 * 127.0.0.1), each with the guard off and on, and the comparison. Exits 1 if the guard did not remove
 * every duplicate, stale result and lost event.
 */
export function registerDemo(program: Command): void {
  const command = program
    .command("demo")
    .description(
      "run the records, images, orders and totals pipelines locally, guard off and on, and compare them",
    )
    .option("--json", "print the comparison as JSON instead of a table")
    .option("--report <file.html>", "also write a self-contained HTML report with charts")
    .option(
      "--scenario <name>",
      "records, images, orders or totals (repeat or comma-separate; default all)",
      list,
    )
    .option("--scale <x>", "multiply the scenarios' sizes", positiveNumber, 1)
    .option(
      "--state-store <kind>",
      `where the guard keeps its state: ${DEMO_STATE_STORES.join(", ")} (a server of the demo's own unless its variable is set: ${demoServerVariables()})`,
      stateStoreKind,
      "dynamodb",
    );
  addSchemaOptions(command, RUNTIME_FLAGS, { dynamodbEndpoint: { value: "<url>" } });
  command.action(async (options: DemoOptions) => {
    try {
      process.exitCode = await demo(options);
    } catch (error) {
      process.stderr.write(`eonce demo: ${oneLine(error)}\n`);
      process.exitCode = 2;
      exitSoon();
    }
  });
}

async function demo(options: DemoOptions): Promise<number> {
  // Every missing optional package at once, with one install line, before anything is loaded or started.
  const images = !options.scenario?.length || options.scenario.includes("images");
  const totals = !options.scenario?.length || options.scenario.includes("totals");
  requireLocalPackages(
    localPackagesFor({
      dynamodbEndpoint: options.dynamodbEndpoint,
      images,
      ...(totals ? { stream: "dynamodb-streams" as const } : {}),
    }),
  );
  const scenarios = stateStoreScenarios(await loadScenarios(options.scenario), options);
  LocalRuntime.preflight(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {});
  const started = Date.now();
  process.stderr.write("starting DynamoDB Local, s3rver and fauxqs on 127.0.0.1…\n");
  const runtime = await LocalRuntime.start({
    seed: options.seed,
    handleSignals: true,
    ...(options.dynamodbEndpoint ? { dynamodbEndpoint: options.dynamodbEndpoint } : {}),
  });
  let states: DemoStates | undefined;
  const bar = progressBar();
  let report: Awaited<ReturnType<typeof runDemo>>;
  try {
    states = await openDemoStates(options.stateStore);
    report = await runDemo({
      runtime,
      scenarios,
      seed: options.seed,
      scale: options.scale,
      onProgress: bar.update,
      ...(states ? { states } : {}),
      stateStore: options.stateStore,
    });
  } finally {
    bar.stop();
    await states?.close();
    await runtime.stop();
  }
  // Wall time of the whole command, server start and stop included.
  report.wallTimeMs = Date.now() - started;
  if (options.json) process.stdout.write(`${JSON.stringify(toJson(report))}\n`);
  else process.stdout.write(`\n${formatTable(report)}\n\n`);
  const summary = `wall time ${(report.wallTimeMs / 1000).toFixed(1)} s, seed ${options.seed}`;
  if (options.report) {
    await writeFile(options.report, renderHtmlReport(report));
    process.stderr.write(`report written to ${options.report}\n`);
  }
  (options.json ? process.stderr : process.stdout).write(`${summary}\n`);
  const failed = report.scenarios.filter(
    (s) => s.guard === "on" && s.duplicateEffects + s.staleResults + s.lostEvents > 0,
  );
  for (const s of failed) {
    process.stderr.write(`guard on, ${s.name}: expected no duplicate effect, stale result or lost event\n`);
  }
  return failed.length > 0 ? 1 : 0;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError("expected a positive number");
  return n;
}

function list(value: string, previous: string[] | undefined): string[] {
  return [
    ...(previous ?? []),
    ...value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}

/** Each demo engine with a server of its own, and the variable that names a running one instead. */
function demoServerVariables(): string {
  return DEMO_STATE_STORES.map((name) => engine(name))
    .flatMap((e) => (e.localServer ? [`${e.name} ${e.env[e.localServer.option] ?? ""}`] : []))
    .join(", ");
}

function stateStoreKind(value: string): DemoStateStoreKind {
  if (!(DEMO_STATE_STORES as readonly string[]).includes(value))
    throw new InvalidArgumentError(`choose one of ${DEMO_STATE_STORES.join(", ")}`);
  return value as DemoStateStoreKind;
}

/**
 * The scenarios a `--state-store` can run: all on DynamoDB; on another engine those whose effect does not fold into
 * DynamoDB's commit (scenario.ts `foldsIntoDynamoDB`). Asked for by name, such a scenario is an error; by default it
 * is left out, with a line on stderr.
 */
function stateStoreScenarios(scenarios: Scenario[], options: DemoOptions): Scenario[] {
  if (options.stateStore === "dynamodb") return scenarios;
  const folding = scenarios.filter((s) => s.foldsIntoDynamoDB).map((s) => s.name);
  if (folding.length === 0) return scenarios;
  const why = `${folding.join(" and ")} fold their effect into DynamoDB's commit transaction, which only a DynamoDB state store commits`;
  if (options.scenario?.length)
    throw new Error(`--state-store ${options.stateStore}: ${why}; run --scenario images`);
  process.stderr.write(`--state-store ${options.stateStore}: running images only (${why})\n`);
  return scenarios.filter((s) => !s.foldsIntoDynamoDB);
}
