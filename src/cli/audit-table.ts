import cliProgress from "cli-progress";
import type { Command } from "commander";
import { auditTable, TABLE_AUDIT_OPTIONS, type TableScanProgress } from "../audit/table-scan.js";
import { OptionsError } from "../core/errors.js";
import { formatTableAudit } from "./audit-table-report.js";
import { AWS_CONNECTION_OPTIONS, type AwsConnection, dynamoDBClientFor } from "./aws-connection.js";
import { oneLine } from "./errors.js";
import { addSchemaOptions, type FlagSpec, type FlagValues } from "./options.js";

/** 0: no duplicates; 1: duplicates found; 2: usage error, or the table could not be described or read. */
export type AuditTableExitCode = 0 | 1 | 2;

const FLAGS: { [K in keyof typeof TABLE_AUDIT_OPTIONS]?: FlagSpec } = {
  keyAttribute: { name: "key", value: "<attr>" },
  groupByAttribute: { name: "group-by", value: "<attr>" },
};

interface CliFlags extends AwsConnection {
  json?: boolean;
  /** true: `--progress`, false: `--no-progress`, undefined: neither. */
  progress?: boolean;
}

/**
 * `eonce audit table <table> --key <attr>`: a parallel segmented Scan of an existing table reporting the effects held
 * by more than one row (see src/audit/table-scan.ts and docs/cli-audit-table.md). Region, credentials and retries
 * come from the SDK's usual configuration (environment, profile); `--endpoint` and `--region` override it.
 */
export function registerAuditTable(audit: Command): Command {
  const command = audit
    .command("table")
    .description("scan a DynamoDB table and report the effects held by more than one row (duplicates)")
    .argument("<table>", "table name");
  const auditOptions = addSchemaOptions(command, TABLE_AUDIT_OPTIONS, FLAGS);
  addSchemaOptions(command, AWS_CONNECTION_OPTIONS, { endpoint: { value: "<url>" } });
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
    .action(async (table: string, flags: CliFlags & Record<string, unknown>) => {
      process.exitCode = await runAuditTable(table, flags, auditOptions(flags));
    });
  return command;
}

async function runAuditTable(
  table: string,
  flags: CliFlags,
  options: FlagValues<typeof TABLE_AUDIT_OPTIONS>,
): Promise<AuditTableExitCode> {
  const client = dynamoDBClientFor(flags);
  const bar = progressBar(flags.progress ?? (process.stderr.isTTY === true && !flags.json));
  try {
    const report = await auditTable({
      ...options,
      keyAttribute: options.keyAttribute as string,
      client,
      tableName: table,
      onProgress: bar.update,
    });
    bar.stop();
    process.stdout.write(`${flags.json ? JSON.stringify(report) : formatTableAudit(report)}\n`);
    return report.duplicatedEffects > 0 ? 1 : 0;
  } catch (error) {
    bar.stop();
    // The SDK's error name says what failed (ResourceNotFoundException, UnrecognizedClientException).
    const name =
      error instanceof Error && error.name !== "Error" && !(error instanceof OptionsError)
        ? `${error.name}: `
        : "";
    process.stderr.write(`eonce audit table: cannot audit ${table}: ${name}${oneLine(error)}\n`);
    return 2;
  } finally {
    client.destroy();
  }
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
