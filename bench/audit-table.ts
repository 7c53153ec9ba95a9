/**
 * `npm run bench:audit`: `eonce audit table`'s scan on DynamoDB Local started here. Seeds a records-like table
 * (hash key `id`, the upload's `sequencer`, `filename`, …) with a known number of duplicated uploads, audits it,
 * checks the counts and prints the rates. The target: 100,000 rows audited in under a minute.
 *
 *   tsx bench/audit-table.ts [--rows 100000] [--segments 4] [--endpoint http://127.0.0.1:8000] [--json]
 *
 * Exits 1 when a count is not the one seeded.
 */
import { randomUUID } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { Command, InvalidArgumentError } from "commander";
import { auditTable } from "../src/engines/dynamodb/audit-rows.js";
import { createTableIfMissing } from "../src/engines/dynamodb/schema.js";
import { dynamoDBClient, startDynamoDBLocal } from "../src/local/emulators/dynamodb-local.js";
import { batchPut } from "../test/kit/batch-write.js";

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError("must be a positive integer");
  return n;
};

const opts = new Command("bench-audit")
  .option("--rows <n>", "rows to seed and audit", positiveInt, 100_000)
  .option("--segments <n>", "parallel Scan segments", positiveInt, 4)
  .option("--endpoint <url>", "use this DynamoDB Local instead of starting one")
  .option("--json", "print the figures as JSON")
  .parse()
  .opts<{ rows: number; segments: number; endpoint?: string; json?: boolean }>();

/**
 * Blocks of 95 uploads: three of them with two rows, one with three; 100 rows, 4 duplicated effects and 5 extra rows
 * a block (100,000 rows: 4,000 and 5,000). The last block is cut at `rows`.
 */
function seedRows(rows: number) {
  const out: Record<string, unknown>[] = [];
  let duplicatedEffects = 0;
  let extraRows = 0;
  const row = (upload: number, copy: number) => ({
    id: `${upload}-${copy}`,
    bucket: "bench-uploads",
    filename: `photos/${upload % 5000}.jpg`,
    sequencer: `00${upload.toString(16).toUpperCase().padStart(14, "0")}`,
    etag: randomUUID().replaceAll("-", ""),
    size: 1000 + (upload % 9000),
    processedAt: new Date(1_700_000_000_000 + upload * 1000).toISOString(),
  });
  for (let block = 0; out.length < rows; block++) {
    const copies = [2, 2, 2, 3];
    for (let i = 0; i < 95 && out.length < rows; i++) {
      const upload = block * 95 + i;
      const n = Math.min(copies[i] ?? 1, rows - out.length);
      for (let c = 0; c < n; c++) out.push(row(upload, c));
      if (n > 1) duplicatedEffects++;
      extraRows += n - 1;
    }
  }
  return { rows: out, duplicatedEffects, extraRows };
}

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
const local = opts.endpoint ? undefined : await startDynamoDBLocal();
const client = dynamoDBClient(opts.endpoint ?? (local?.endpoint as string));
const table = `bench-audit-${randomUUID().slice(0, 8)}`;
try {
  await createTableIfMissing(client, table, "id");
  const seed = seedRows(opts.rows);
  const seedStarted = performance.now();
  await batchPut(client, table, seed.rows, 16);
  const seedMs = performance.now() - seedStarted;
  const report = await auditTable({
    client,
    tableName: table,
    keyAttribute: "sequencer",
    segments: opts.segments,
  });
  const ok =
    report.rowsRead === opts.rows &&
    report.duplicatedEffects === seed.duplicatedEffects &&
    report.extraRows === seed.extraRows;
  const figures = {
    rows: opts.rows,
    segments: opts.segments,
    seedRowsPerSecond: Math.round(opts.rows / (seedMs / 1000)),
    auditWallMs: report.wallMs,
    auditRowsPerSecond: Math.round(report.scannedCount / (report.wallMs / 1000)),
    duplicatedEffects: report.duplicatedEffects,
    extraRows: report.extraRows,
    expected: { duplicatedEffects: seed.duplicatedEffects, extraRows: seed.extraRows },
    countsOk: ok,
    underAMinute: report.wallMs < 60_000,
    cores: cpus().length,
    loadAverage: loadavg().map((l) => Math.round(l * 10) / 10),
  };
  process.stdout.write(
    opts.json
      ? `${JSON.stringify(figures)}\n`
      : [
          `seeded ${opts.rows} rows in ${(seedMs / 1000).toFixed(1)} s (${figures.seedRowsPerSecond} rows/s, BatchWriteItem ×16)`,
          `audited ${report.scannedCount} rows in ${(report.wallMs / 1000).toFixed(1)} s with ${opts.segments} segments: ` +
            `${figures.auditRowsPerSecond} rows/s, ${report.pages} pages`,
          `duplicated effects ${report.duplicatedEffects} (seeded ${seed.duplicatedEffects}), extra rows ` +
            `${report.extraRows} (seeded ${seed.extraRows}): ${ok ? "counts match" : "COUNTS DIFFER"}`,
          `target 100,000 rows under a minute: ${figures.underAMinute ? "met" : "missed"} ` +
            `(${figures.cores} cores, load average ${figures.loadAverage.join(" ")})`,
          "",
        ].join("\n"),
  );
  process.exitCode = ok ? 0 : 1;
} finally {
  client.destroy();
  await local?.stop();
}
