import {
  type AttributeValue,
  DescribeTableCommand,
  type DynamoDBClient,
  ScanCommand,
  type ScanCommandInput,
  type ScanCommandOutput,
} from "@aws-sdk/client-dynamodb";
import * as opt from "../core/options.js";
import { DYNAMODB_TABLE_FIELDS } from "../stores/dynamodb/options.js";
import { attributeText } from "./attribute-text.js";
import { DuplicateTally, primaryKeyText, type TallySummary } from "./duplicate-tally.js";

/** Where a table scan is, after each page. */
export interface TableScanProgress {
  /** Rows returned so far (rows holding the key attribute). */
  rowsRead: number;
  /** Rows evaluated so far, with or without the key attribute. */
  scannedCount: number;
  pages: number;
  segmentsDone: number;
  segments: number;
  /** The table's item count from DescribeTable (DynamoDB updates it about every six hours): for a progress total. */
  estimatedRows: number;
}

export interface TableAuditOptions {
  client: DynamoDBClient;
  tableName: string;
  /** The attribute naming one effect (an upload's sequencer, an order id): rows sharing its value are duplicates. */
  keyAttribute: string;
  /** Effects are scoped to this attribute's value (rows are duplicates when they share both), reported per group. */
  groupByAttribute?: string;
  /** Parallel Scan segments (TotalSegments). Default 4. */
  segments?: number;
  /** Rows evaluated per Scan page (the Scan's Limit). Default: DynamoDB's, up to 1 MB a page. */
  pageLimit?: number;
  /** Strongly consistent reads: twice the read units. Default false. */
  consistentRead?: boolean;
  /** Duplicated effects (and groups) to report, most rows first. Default 10. */
  examples?: number;
  /** Primary keys kept per duplicated effect (the memory bound per effect). Default 5. */
  keysPerEffect?: number;
  onProgress?: (progress: TableScanProgress) => void;
  signal?: AbortSignal;
}

/** The options of `auditTable`; the fields with a doc are also the flags of `eonce audit table`. */
export const TABLE_AUDIT_OPTIONS = opt.schemaFor<TableAuditOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  keyAttribute: opt.required(
    opt.string({ doc: "the attribute naming one effect: rows with the same value are duplicates" }),
  ),
  groupByAttribute: opt.string({ doc: "scope effects to this attribute's value and report per group" }),
  segments: opt.integer({ min: 1, max: 1000, default: 4, doc: "parallel Scan segments" }),
  pageLimit: opt.integer({ min: 1, doc: "rows evaluated per Scan page (Limit; default up to 1 MB a page)" }),
  consistentRead: opt.boolean({ default: false, doc: "strongly consistent reads (twice the read units)" }),
  examples: opt.integer({ min: 0, default: 10, doc: "duplicated effects to show, most rows first" }),
  keysPerEffect: opt.integer({
    min: 1,
    max: 100,
    default: 5,
    doc: "primary keys shown per duplicated effect",
  }),
  onProgress: opt.func<(progress: TableScanProgress) => void>(),
  signal: opt.custom<AbortSignal>("an AbortSignal", (v) => v instanceof AbortSignal),
});

type AuditOptions = opt.Resolved<typeof TABLE_AUDIT_OPTIONS>;

export interface TableAuditReport extends Omit<TallySummary, "rows"> {
  table: string;
  keyAttribute: string;
  groupByAttribute: string | null;
  /** The table's key attribute names: hash, then range. */
  primaryKey: string[];
  segments: number;
  consistentRead: boolean;
  /** Rows the scan evaluated: the whole table. */
  scannedCount: number;
  /** Rows holding the key attribute (the scan returns only those): the denominator of the shares. */
  rowsRead: number;
  /** scannedCount − rowsRead. */
  rowsWithoutKey: number;
  /** extraRows / rowsRead (0 when no row was read). */
  extraRowShare: number;
  /** rowsInDuplicatedEffects / rowsRead (0 when no row was read). */
  duplicatedRowShare: number;
  /** DescribeTable's ItemCount and TableSizeBytes (updated about every six hours). */
  estimatedRows: number;
  tableSizeBytes: number;
  /** What a scan of tableSizeBytes costs: 1 unit per 4 KB read, half that eventually consistent. */
  estimatedReadUnits: number;
  /** The sum of the pages' ConsumedCapacity; null when the server returns none. */
  consumedReadUnits: number | null;
  pages: number;
  wallMs: number;
}

interface TableShape {
  primaryKey: string[];
  estimatedRows: number;
  tableSizeBytes: number;
}

/**
 * Reports the duplicated effects of a table: a parallel segmented Scan reading only the key, group and primary key
 * attributes of the rows holding the key attribute, tallied in bounded memory (see DuplicateTally).
 * Throws OptionsError for bad options, the SDK's error when the table cannot be described or read.
 */
export async function auditTable(options: TableAuditOptions): Promise<TableAuditReport> {
  const o = opt.resolveOptions("auditTable", TABLE_AUDIT_OPTIONS, options);
  const started = performance.now();
  const shape = await describeTable(o);
  const tally = new DuplicateTally(shape.primaryKey, o.groupByAttribute !== undefined, o.keysPerEffect);
  const progress: TableScanProgress = {
    rowsRead: 0,
    scannedCount: 0,
    pages: 0,
    segmentsDone: 0,
    segments: o.segments,
    estimatedRows: shape.estimatedRows,
  };
  let consumed: number | null = null;
  const read = rowReader(o, shape.primaryKey);
  await scanSegments(o, scanInput(o, shape.primaryKey), {
    page(page) {
      for (const item of page.Items ?? []) tally.add(...read(item));
      progress.rowsRead += page.Count ?? 0;
      progress.scannedCount += page.ScannedCount ?? 0;
      progress.pages++;
      const units = page.ConsumedCapacity?.CapacityUnits;
      if (units !== undefined) consumed = (consumed ?? 0) + units;
      o.onProgress?.({ ...progress });
    },
    segmentDone() {
      progress.segmentsDone++;
      o.onProgress?.({ ...progress });
    },
  });
  return report(o, shape, tally.summary(o.examples), progress, consumed, performance.now() - started);
}

async function describeTable(o: AuditOptions): Promise<TableShape> {
  const { Table } = await o.client.send(
    new DescribeTableCommand({ TableName: o.tableName }),
    o.signal ? { abortSignal: o.signal } : {},
  );
  const key = Table?.KeySchema ?? [];
  const hash = key.find((k) => k.KeyType === "HASH")?.AttributeName;
  if (hash === undefined) throw new Error(`table ${o.tableName} has no hash key in its description`);
  const range = key.find((k) => k.KeyType === "RANGE")?.AttributeName;
  return {
    primaryKey: range === undefined ? [hash] : [hash, range],
    estimatedRows: Table?.ItemCount ?? 0,
    tableSizeBytes: Table?.TableSizeBytes ?? 0,
  };
}

/** The Scan of every segment: the attributes needed, only the rows holding the key attribute. */
function scanInput(o: AuditOptions, primaryKey: readonly string[]): ScanCommandInput {
  const names = [
    ...new Set([o.keyAttribute, ...(o.groupByAttribute ? [o.groupByAttribute] : []), ...primaryKey]),
  ];
  const placeholder = (name: string) => `#a${names.indexOf(name)}`;
  return {
    TableName: o.tableName,
    TotalSegments: o.segments,
    ProjectionExpression: names.map(placeholder).join(", "),
    FilterExpression: `attribute_exists(${placeholder(o.keyAttribute)})`,
    ExpressionAttributeNames: Object.fromEntries(names.map((n) => [placeholder(n), n])),
    ConsistentRead: o.consistentRead,
    ReturnConsumedCapacity: "TOTAL",
    ...(o.pageLimit !== undefined ? { Limit: o.pageLimit } : {}),
  };
}

/** A returned row → the tally's texts: key, group (undefined: absent), primary key. */
function rowReader(o: AuditOptions, primaryKey: readonly string[]) {
  const [hash, range] = primaryKey as [string, string | undefined];
  const text = (item: Record<string, AttributeValue>, name: string) => {
    const value = item[name];
    return value === undefined ? undefined : attributeText(value);
  };
  return (item: Record<string, AttributeValue>): [string, string | undefined, string] => [
    text(item, o.keyAttribute) as string,
    o.groupByAttribute === undefined ? undefined : text(item, o.groupByAttribute),
    primaryKeyText(text(item, hash) as string, range === undefined ? undefined : text(item, range)),
  ];
}

/**
 * Every segment in parallel, each paging with ExclusiveStartKey until the end. The first failure aborts the other
 * segments' requests and is thrown.
 */
async function scanSegments(
  o: AuditOptions,
  input: ScanCommandInput,
  on: { page(page: ScanCommandOutput): void; segmentDone(): void },
): Promise<void> {
  const controller = new AbortController();
  const abortSignal = o.signal ? AbortSignal.any([o.signal, controller.signal]) : controller.signal;
  const segment = async (n: number) => {
    try {
      let start: Record<string, AttributeValue> | undefined;
      do {
        const page = await o.client.send(
          new ScanCommand({ ...input, Segment: n, ExclusiveStartKey: start }),
          {
            abortSignal,
          },
        );
        on.page(page);
        start = page.LastEvaluatedKey;
      } while (start !== undefined);
      on.segmentDone();
    } catch (error) {
      controller.abort();
      throw error;
    }
  };
  await Promise.all(Array.from({ length: o.segments }, (_, n) => segment(n)));
}

function report(
  o: AuditOptions,
  shape: TableShape,
  summary: TallySummary,
  progress: TableScanProgress,
  consumedReadUnits: number | null,
  wallMs: number,
): TableAuditReport {
  const share = (n: number) => (summary.rows === 0 ? 0 : n / summary.rows);
  return {
    table: o.tableName,
    keyAttribute: o.keyAttribute,
    groupByAttribute: o.groupByAttribute ?? null,
    primaryKey: shape.primaryKey,
    segments: o.segments,
    consistentRead: o.consistentRead,
    scannedCount: progress.scannedCount,
    rowsRead: summary.rows,
    rowsWithoutKey: progress.scannedCount - summary.rows,
    effects: summary.effects,
    duplicatedEffects: summary.duplicatedEffects,
    extraRows: summary.extraRows,
    rowsInDuplicatedEffects: summary.rowsInDuplicatedEffects,
    extraRowShare: share(summary.extraRows),
    duplicatedRowShare: share(summary.rowsInDuplicatedEffects),
    rowsPerDuplicatedEffect: summary.rowsPerDuplicatedEffect,
    groups: summary.groups,
    examples: summary.examples,
    estimatedRows: shape.estimatedRows,
    tableSizeBytes: shape.tableSizeBytes,
    estimatedReadUnits: Math.ceil(shape.tableSizeBytes / 4096) * (o.consistentRead ? 1 : 0.5),
    consumedReadUnits,
    pages: progress.pages,
    wallMs: Math.round(wallMs),
  };
}
