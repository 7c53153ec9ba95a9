import cliProgress from "cli-progress";
import type { Command } from "commander";
import type { TableScanProgress } from "../audit/table-audit.js";
import { OptionsError } from "../core/errors.js";
import { TABLE_AUDIT_OPTIONS, type TableAuditOptions } from "../engines/dynamodb/audit-rows.js";
import { AUDIT_ENGINE_NAMES, engine, isEngineName } from "../engines/registry.js";
import {
  AUDIT_CONNECTION_FLAGS,
  AUDIT_CONNECTION_OPTIONS,
  type ResolvedAuditConnection,
  resolveAuditConnection,
} from "./audit-table-options.js";
import { formatTableAudit } from "./audit-table-report.js";
import { oneLine } from "./errors.js";
import { addSchemaOptions, type FlagSpec, type FlagValues } from "./options.js";

/** 0: no duplicates; 1: duplicates found; 2: usage error, or the table could not be described or read. */
export type AuditTableExitCode = 0 | 1 | 2;

const FLAGS: { [K in keyof typeof TABLE_AUDIT_OPTIONS]?: FlagSpec } = {
  keyAttribute: { name: "key", value: "<attr>" },
  groupByAttribute: { name: "group-by", value: "<attr>" },
};

interface CliFlags {
  json?: boolean;
  /** true: `--progress`, false: `--no-progress`, undefined: neither. */
  progress?: boolean;
}

/** What the action read from the command line, for runAuditTable. */
interface Invocation {
  table: string;
  flags: CliFlags;
  options: FlagValues<typeof TABLE_AUDIT_OPTIONS>;
  connection: FlagValues<typeof AUDIT_CONNECTION_OPTIONS>;
  /** Whether a flag (commander's attribute name) was on the command line rather than defaulted. */
  given: (attribute: string) => boolean;
}

/**
 * `eonce audit table <table> --key <attr>`: reads an existing table and reports the effects held by more than one
 * row (see src/audit/table-audit.ts and docs/cli-audit-table.md), on every engine with a table audit (its
 * `auditTable`, src/engines/engine.ts), reached by its connection flags.
 */
export function registerAuditTable(audit: Command): Command {
  const command = audit
    .command("table")
    .description(
      `read a table (${AUDIT_ENGINE_NAMES.join(", ")}) and report the effects held by more than one row (duplicates)`,
    )
    .argument("<table>", "table name");
  const auditOptions = addSchemaOptions(command, TABLE_AUDIT_OPTIONS, FLAGS);
  const connection = addSchemaOptions(command, AUDIT_CONNECTION_OPTIONS, AUDIT_CONNECTION_FLAGS);
  command.options.find((o) => o.long === "--key")?.makeOptionMandatory();
  command
    .option("--json", "print the report as one JSON object")
    .option(
      "--progress",
      "progress bar on stderr even when it is no terminal (default: on a terminal, not with --json)",
    )
    .option("--no-progress", "no progress bar")
    .addHelpText(
      "after",
      "\nExit codes: 0 no duplicates, 1 duplicates found, 2 usage error or the table unreadable.",
    )
    .action(async (table: string, flags: CliFlags & Record<string, unknown>, self: Command) => {
      const given = (attribute: string) => {
        const source = self.getOptionValueSource(attribute);
        return source !== undefined && source !== "default";
      };
      process.exitCode = await runAuditTable({
        table,
        flags,
        options: auditOptions(flags),
        connection: connection(flags),
        given,
      });
    });
  return command;
}

async function runAuditTable(run: Invocation): Promise<AuditTableExitCode> {
  const bar = progressBar(run.flags.progress ?? (process.stderr.isTTY === true && !run.flags.json));
  let engineName = "";
  try {
    const c = resolveAuditConnection("eonce audit table", run.connection, run.given);
    engineName = c.engine;
    const options = {
      ...run.options,
      keyAttribute: run.options.keyAttribute as string,
      onProgress: bar.update,
    };
    const report = await auditOn(run.table, c, options);
    bar.stop();
    process.stdout.write(`${run.flags.json ? JSON.stringify(report) : formatTableAudit(report)}\n`);
    return report.duplicatedEffects > 0 ? 1 : 0;
  } catch (error) {
    bar.stop();
    process.stderr.write(
      `eonce audit table: cannot audit ${run.table}: ${errorName(error, engineName)}${oneLine(error)}\n`,
    );
    return 2;
  }
}

type CommonOptions = Omit<TableAuditOptions, "client" | "tableName">;

/** The audit on the engine asked for (its `auditTable`); the engine closes its connection however it ends. */
async function auditOn(table: string, c: ResolvedAuditConnection, options: CommonOptions) {
  const e = engine(c.engine);
  if (!e.auditTable) throw new OptionsError(`--engine ${c.engine} has no table audit`);
  return e.auditTable(
    c,
    { ...options, tableName: table },
    {
      missingPeer: (peer, cause) =>
        new OptionsError(`--engine ${c.engine} needs ${peer}: npm i ${peer}`, { cause }),
      usage: (message) => new OptionsError(message),
    },
  );
}

/**
 * What failed, before the message: the SDK's error name (ResourceNotFoundException, UnrecognizedClientException), or
 * what the engine says (`errorPrefix`: a server's error code); nothing for usage errors.
 */
function errorName(error: unknown, engineName: string): string {
  if (!(error instanceof Error) || error instanceof OptionsError) return "";
  const prefix = isEngineName(engineName) ? engine(engineName).errorPrefix?.(error) : undefined;
  if (prefix !== undefined) return prefix;
  return error.name === "Error" || error.name === "TableAuditSourceError" ? "" : `${error.name}: `;
}

/** Rows scanned against DescribeTable's item count (an estimate: the total grows when the scan passes it). */
function progressBar(show: boolean, stream: NodeJS.WriteStream = process.stderr) {
  if (!show) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: "scan {bar} {value}/~{total} rows | segments {done}/{segments} | {duration_formatted}",
      hideCursor: false,
      // `--progress` into a pipe or a file: a line a second rather than nothing.
      noTTYOutput: !stream.isTTY,
      notTTYSchedule: 1000,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(p: TableScanProgress) {
      const total = Math.max(p.estimatedRows, p.scannedCount, 1);
      const payload = { done: p.segmentsDone, segments: p.segments };
      if (!started) bar.start(total, p.scannedCount, payload);
      else if (total !== bar.getTotal()) bar.setTotal(total);
      started = true;
      bar.update(p.scannedCount, payload);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
