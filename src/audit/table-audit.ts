import { EffectivelyOnceError } from "../core/errors.js";
import * as opt from "../core/options.js";
import { DuplicateTally, type TallySummary } from "./duplicate-tally.js";

/**
 * `eonce audit table` on any engine: a row source reads the table (each engine's `audit-rows.ts`: a segmented Scan,
 * a cursor, one statement; the SQL ones through sql-table.ts) and this file tallies its rows and writes the report.
 * Only the row source knows the engine.
 */
/** The name of the audited table's engine (src/engines/registry.ts: those with an `auditTable`). */
export type AuditEngine = string;

/** One row holding the key, as the tally reads it: key text, group text (undefined: none), primary key text. */
export type AuditRow = readonly [key: string, group: string | undefined, primaryKey: string];

/** What one page of a source holds. */
export interface RowPage {
  /** The rows holding the key. */
  rows: Iterable<AuditRow>;
  /** Rows evaluated for this page, with or without the key. */
  scanned: number;
  /** Read units the page consumed (DynamoDB); undefined when the engine reports none. */
  readUnits?: number;
}

/** What a source says of the table before it reads it. */
export interface TableShape {
  /** The table as the report names it (`schema.table` on PostgreSQL). */
  table: string;
  /** The primary key's attribute or column names, in key order. */
  primaryKey: string[];
  /** The engine's estimate of the row count (a progress total); 0 when it has none. */
  estimatedRows: number;
  /** The table's size as the engine reports it; null when it reports none. */
  tableSizeBytes: number | null;
}

/** The engine-specific part of an audit: where the rows come from. */
export interface RowSource {
  readonly engine: AuditEngine;
  /** Parts read side by side (DynamoDB's segments; 1 for a SQL cursor). */
  readonly segments: number;
  /** DynamoDB: strongly consistent reads; SQL: always true (one snapshot). */
  readonly consistentRead: boolean;
  /** Throws when the table, or a column the audit names, does not exist. */
  describe(): Promise<TableShape>;
  /** Reads every row once, page by page (memory bounded by a page), calling `segmentDone` as each part ends. */
  read(shape: TableShape, on: { page(page: RowPage): void; segmentDone(): void }): Promise<void>;
  /** What reading the whole table costs in the engine's read units; null when it has none. */
  estimatedReadUnits(shape: TableShape): number | null;
}

/** Where a table audit is, after each page. */
export interface TableScanProgress {
  /** Rows returned so far (rows holding the key attribute). */
  rowsRead: number;
  /** Rows evaluated so far, with or without the key attribute. */
  scannedCount: number;
  pages: number;
  segmentsDone: number;
  segments: number;
  /** The engine's estimate of the table's rows (DynamoDB's ItemCount, updated about every six hours). */
  estimatedRows: number;
}

/** The options every engine takes; the fields with a doc are also flags of `eonce audit table`. */
export interface RowAuditOptions {
  /** The attribute (column) naming one effect (an upload's sequencer, an order id): rows sharing its value are duplicates. */
  keyAttribute: string;
  /** Effects are scoped to this attribute's value (rows are duplicates when they share both), reported per group. */
  groupByAttribute?: string;
  /** Rows per page: the Scan's Limit (default up to 1 MB a page); on SQL 1000 (a FETCH on PostgreSQL). */
  pageLimit?: number;
  /** Duplicated effects (and groups) to report, most rows first. Default 10. */
  examples?: number;
  /** Primary keys kept per duplicated effect (the memory bound per effect). Default 5. */
  keysPerEffect?: number;
  onProgress?: (progress: TableScanProgress) => void;
  signal?: AbortSignal;
}

export const ROW_AUDIT_FIELDS = {
  keyAttribute: opt.required(
    opt.string({ doc: "the attribute (column) naming one effect: rows with the same value are duplicates" }),
  ),
  groupByAttribute: opt.string({
    doc: "scope effects to this attribute's (column's) value and report per group",
  }),
  pageLimit: opt.integer({
    min: 1,
    doc: "rows per page: the Scan's Limit (default up to 1 MB a page); on SQL default 1000 (a FETCH with a cursor)",
  }),
  examples: opt.integer({ min: 0, default: 10, doc: "duplicated effects to show, most rows first" }),
  keysPerEffect: opt.integer({
    min: 1,
    max: 100,
    default: 5,
    doc: "primary keys shown per duplicated effect",
  }),
  onProgress: opt.func<(progress: TableScanProgress) => void>(),
  signal: opt.custom<AbortSignal>("an AbortSignal", (v) => v instanceof AbortSignal),
};

export const ROW_AUDIT_OPTIONS = opt.schemaFor<RowAuditOptions>()(ROW_AUDIT_FIELDS);
export type ResolvedRowAuditOptions = opt.Resolved<typeof ROW_AUDIT_OPTIONS>;

export interface TableAuditReport extends Omit<TallySummary, "rows"> {
  engine: AuditEngine;
  table: string;
  keyAttribute: string;
  groupByAttribute: string | null;
  /** The table's key attribute names: hash, then range (a SQL table's primary key columns, in order). */
  primaryKey: string[];
  segments: number;
  consistentRead: boolean;
  /** Rows the audit evaluated: the whole table. */
  scannedCount: number;
  /** Rows holding the key attribute: the denominator of the shares. */
  rowsRead: number;
  /** scannedCount − rowsRead. */
  rowsWithoutKey: number;
  /** extraRows / rowsRead (0 when no row was read). */
  extraRowShare: number;
  /** rowsInDuplicatedEffects / rowsRead (0 when no row was read). */
  duplicatedRowShare: number;
  /** The engine's estimates: DynamoDB's ItemCount and TableSizeBytes (updated about every six hours), … */
  estimatedRows: number;
  tableSizeBytes: number | null;
  /** DynamoDB: what a scan of tableSizeBytes costs (1 unit per 4 KB read, half that eventually consistent). */
  estimatedReadUnits: number | null;
  /** The sum of the pages' ConsumedCapacity; null when the engine returns none. */
  consumedReadUnits: number | null;
  pages: number;
  wallMs: number;
}

/**
 * Reports the duplicated effects of the table a source reads, tallied in bounded memory (see DuplicateTally).
 * `o` is resolved by the engine's entry point (its schema spreads ROW_AUDIT_FIELDS). Throws what the source throws.
 */
export async function auditRows(source: RowSource, o: ResolvedRowAuditOptions): Promise<TableAuditReport> {
  const started = performance.now();
  const shape = await source.describe();
  const tally = new DuplicateTally(shape.primaryKey, o.groupByAttribute !== undefined, o.keysPerEffect);
  const progress: TableScanProgress = {
    rowsRead: 0,
    scannedCount: 0,
    pages: 0,
    segmentsDone: 0,
    segments: source.segments,
    estimatedRows: shape.estimatedRows,
  };
  let consumed: number | null = null;
  await source.read(shape, {
    page(page) {
      for (const [key, group, primaryKey] of page.rows) {
        tally.add(key, group, primaryKey);
        progress.rowsRead++;
      }
      progress.scannedCount += page.scanned;
      progress.pages++;
      if (page.readUnits !== undefined) consumed = (consumed ?? 0) + page.readUnits;
      o.onProgress?.({ ...progress });
    },
    segmentDone() {
      progress.segmentsDone++;
      o.onProgress?.({ ...progress });
    },
  });
  const summary = tally.summary(o.examples);
  return report(o, source, shape, summary, progress, consumed, performance.now() - started);
}

function report(
  o: ResolvedRowAuditOptions,
  source: RowSource,
  shape: TableShape,
  summary: TallySummary,
  progress: TableScanProgress,
  consumedReadUnits: number | null,
  wallMs: number,
): TableAuditReport {
  const share = (n: number) => (summary.rows === 0 ? 0 : n / summary.rows);
  return {
    engine: source.engine,
    table: shape.table,
    keyAttribute: o.keyAttribute,
    groupByAttribute: o.groupByAttribute ?? null,
    primaryKey: shape.primaryKey,
    segments: source.segments,
    consistentRead: source.consistentRead,
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
    estimatedReadUnits: source.estimatedReadUnits(shape),
    consumedReadUnits,
    pages: progress.pages,
    wallMs: Math.round(wallMs),
  };
}

/** The table, or a column the audit names, is not there (a usage error: nothing was read). */
export class TableAuditSourceError extends EffectivelyOnceError {}

/** Waits for the event loop's next turn: a synchronous reader lets timers (the progress bar) and aborts run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Any name as a quoted SQL identifier (a double quote inside is doubled): user tables are not limited to plain names. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
