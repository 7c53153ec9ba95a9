import cliProgress from "cli-progress";
import type { Command } from "commander";
import type { TableScanProgress } from "../audit/table-audit.js";
import { OptionsError } from "../core/errors.js";
import { auditTable, TABLE_AUDIT_OPTIONS, type TableAuditOptions } from "../engines/dynamodb/audit-rows.js";
import { dynamoDBClientFor } from "../engines/dynamodb/connection.js";
import { auditPostgresTable } from "../engines/postgres/audit-rows.js";
import { openPostgresPool } from "../engines/postgres/connection.js";
import { auditSqliteTable } from "../engines/sqlite/audit-rows.js";
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
 * row (see src/audit/table-audit.ts and docs/cli-audit-table.md). DynamoDB (a parallel segmented Scan; region,
 * credentials and retries from the SDK's usual configuration, `--endpoint` and `--region` on top), PostgreSQL (a
 * cursor; `--database-url`, else DATABASE_URL, else PG*) or SQLite (`--file`).
 */
export function registerAuditTable(audit: Command): Command {
  const command = audit
    .command("table")
    .description(
      "read a DynamoDB, PostgreSQL or SQLite table and report the effects held by more than one row (duplicates)",
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
  try {
    const c = resolveAuditConnection("eonce audit table", run.connection, run.given);
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
      `eonce audit table: cannot audit ${run.table}: ${errorName(error)}${oneLine(error)}\n`,
    );
    return 2;
  }
}

type CommonOptions = Omit<TableAuditOptions, "client" | "tableName">;

/** The audit on the engine asked for; the connection is closed however it ends. */
async function auditOn(table: string, c: ResolvedAuditConnection, options: CommonOptions) {
  // Segments and consistent reads are DynamoDB's (resolveAuditConnection refused them given for another engine).
  const { segments: _segments, consistentRead: _consistent, ...rowOptions } = options;
  switch (c.engine) {
    case "dynamodb": {
      const client = dynamoDBClientFor(c);
      try {
        return await auditTable({ ...options, client, tableName: table });
      } finally {
        client.destroy();
      }
    }
    case "postgres": {
      // One connection: one cursor.
      const pool = await openPostgresPool(c, {
        max: 1,
        missingPeer: (cause) =>
          new OptionsError("--engine postgres needs node-postgres: npm i pg", { cause }),
      });
      try {
        return await auditPostgresTable({ ...rowOptions, pool, schema: c.schema, tableName: table });
      } finally {
        await pool.end();
      }
    }
    case "sqlite":
      return auditSqliteTable({ ...rowOptions, file: c.file as string, tableName: table });
  }
}

/**
 * What failed, before the message: the SDK's error name (ResourceNotFoundException, UnrecognizedClientException),
 * PostgreSQL's SQLSTATE (node-postgres names every server error "error"); nothing for usage errors.
 */
function errorName(error: unknown): string {
  if (!(error instanceof Error) || error instanceof OptionsError) return "";
  const code = (error as { code?: unknown }).code;
  if (error.name === "error" && typeof code === "string") return `PostgreSQL ${code}: `;
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
