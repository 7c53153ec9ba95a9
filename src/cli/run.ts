import { type Command, InvalidArgumentError } from "commander";
import { localPackagesFor, requireLocalPackages } from "../local/emulators/requirements.js";
import { FAULT_OPTIONS } from "../sim/live/faults.js";
import { exitSoon, oneLine } from "./errors.js";
import { addSchemaOptions, type FlagSpec } from "./options.js";
import { isTypeScriptHandler } from "./run/load-handler.js";
import { RUN_OPTIONS, type RunHandlerOptions } from "./run/options.js";
import { runExitCode, strictByDefault } from "./run/report.js";
import { formatRunReport, type RunReport, runHandler } from "./run/run-handler.js";
import { CONNECTION_FLAGS } from "./state/options.js";

/** Where a flag differs from its field: its name, its value's name in help, how its text is read. */
const RUN_FLAGS: { [K in keyof typeof RUN_OPTIONS]?: FlagSpec } = {
  from: { value: "<folder>" },
  versions: { value: "<folder>" },
  messages: { value: "<file|folder>" },
  reuploads: { name: "reupload" },
  tables: { name: "table", value: "<name[:hashKey]>", parse: table },
  effects: { value: "<table:attribute[:step]>", parse: effects },
  env: { value: "<KEY=VALUE>", parse: envPair },
  dynamodbEndpoint: { value: "<url>" },
  crashedClaims: { value: "<keep|release>" },
  durable: { value: "<module:export>" },
  // The state's connection: eonce state's flags (src/cli/state/options.ts), the store and file named for the state.
  stateStore: CONNECTION_FLAGS.store,
  stateFile: CONNECTION_FLAGS.file,
  databaseUrl: CONNECTION_FLAGS.databaseUrl,
  keyAttribute: CONNECTION_FLAGS.keyAttribute,
  keyColumn: CONNECTION_FLAGS.keyColumn,
  rowKey: CONNECTION_FLAGS.rowKey,
  rowKeyInverse: CONNECTION_FLAGS.rowKeyInverse,
  stateUrl: CONNECTION_FLAGS.url,
  keyPrefix: CONNECTION_FLAGS.keyPrefix,
};

/** The exit codes, as `eonce run --help` lists them (docs/local-runtime.md). */
const EXIT_CODES = `
Result and exit code:
  ok       every check that applies ran and passed, every event got through: exit 0
  FAIL     a check failed, or an event never got through: exit 1
  unknown  no check failed, but one could not be made ("not checked": pass the flag it names): exit 3 under
           --strict (the default when CI is set), else 0
  bad usage or a start-up error: one line on stderr, exit 2`;

/**
 * `eonce run <path:export>`: the user's own handler on the local runtime, with a chosen source and faults, and a
 * report of outcomes and invariant checks, its result ok, unknown or FAIL (exit codes: EXIT_CODES).
 */
export function registerRun(program: Command): void {
  const command = program
    .command("run")
    .description(
      "run your Lambda handler locally against S3 uploads or replayed messages, with faults, and check the invariants",
    )
    .argument("<handler>", "module and export, like a Lambda handler setting: path/to/module.ts:handler");
  const runOptions = addSchemaOptions(command, RUN_OPTIONS, RUN_FLAGS);
  const faultOptions = addSchemaOptions(command, FAULT_OPTIONS);
  command
    .option("--json", "print the report as JSON")
    .option("--strict", "exit 3 when the result is unknown (a check not made); the default when CI is set")
    .option("--no-strict", "exit 0 when the result is unknown")
    .addHelpText("after", EXIT_CODES)
    .action(async (handler: string, flags: Record<string, unknown>) => {
      // The SDK warns once per process that its 2027 releases need Node 22; in the report it is noise.
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
      try {
        const options = runOptions(flags);
        // Every missing optional package at once, with one install line, before any server starts.
        requireLocalPackages(packagesFor(handler, options));
        const print = (report: RunReport) =>
          process.stdout.write(flags.json ? `${JSON.stringify(report)}\n` : `${formatRunReport(report)}\n`);
        let printed = false;
        const report = await runHandler(
          { ...options, handler, faults: faultOptions(flags), handleSignals: true },
          {
            // --keep: the report first, then the servers stay up with what the run left until Ctrl-C.
            beforeStop: async (r, endpoints) => {
              if (!options.keep) return;
              print(r);
              printed = true;
              await keepUntilInterrupted(endpoints);
            },
          },
        );
        if (!printed) print(report);
        const strict = typeof flags.strict === "boolean" ? flags.strict : strictByDefault();
        process.exitCode = runExitCode(report, strict);
        // A crashed run's code is left dead, not unwound (--crashed-claims keep): what it holds (a pooled
        // connection, a timer) must not keep the process alive, any more than it outlives a crashed Lambda.
        exitSoon();
      } catch (error) {
        process.stderr.write(`eonce run: ${oneLine(error)}\n`);
        process.exitCode = 2;
        exitSoon();
      }
    });
}

/** The optional packages a run needs: the servers, tsx for TypeScript, the durable testing package, a stream's. */
function packagesFor(
  handler: string,
  options: Pick<RunHandlerOptions, "dynamodbEndpoint" | "durable" | "source">,
) {
  return localPackagesFor({
    dynamodbEndpoint: options.dynamodbEndpoint,
    typescript: [handler, options.durable].some((spec) => spec !== undefined && isTypeScriptHandler(spec)),
    durable: options.durable !== undefined,
    stream:
      options.source === "kinesis" || options.source === "dynamodb-streams" ? options.source : undefined,
  });
}

/** Prints where the kept servers are, then waits for SIGINT or SIGTERM. */
async function keepUntilInterrupted(endpoints: Record<string, string>): Promise<void> {
  const lines = Object.entries(endpoints).map(([k, v]) => `  ${k}=${v}`);
  process.stderr.write(
    `eonce run --keep: the servers stay up until Ctrl-C (local credentials: docs/local-runtime.md)\n${lines.join("\n")}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

function table(value: string, previous: unknown): { name: string; hashKey: string }[] {
  const [name, hashKey = "pk"] = value.split(":");
  if (!name) throw new InvalidArgumentError("expected <name>[:<hashKey>]");
  return [...((previous as { name: string; hashKey: string }[] | undefined) ?? []), { name, hashKey }];
}

function effects(value: string): { table: string; attribute: string; step?: string } {
  const [name, attribute, step, ...more] = value.split(":");
  if (!name || !attribute || step === "" || more.length)
    throw new InvalidArgumentError("expected <table>:<attribute>[:<stepAttribute>]");
  return { table: name, attribute, ...(step ? { step } : {}) };
}

function envPair(value: string, previous: unknown): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new InvalidArgumentError("expected KEY=VALUE");
  return {
    ...((previous as Record<string, string> | undefined) ?? {}),
    [value.slice(0, eq)]: value.slice(eq + 1),
  };
}
