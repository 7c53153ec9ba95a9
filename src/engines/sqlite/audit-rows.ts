import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { sqlValueText } from "../../audit/attribute-text.js";
import { compositeKeyText } from "../../audit/duplicate-tally.js";
import {
  type AuditRow,
  auditRows,
  nextTurn,
  quoteIdentifier,
  ROW_AUDIT_FIELDS,
  type RowAuditOptions,
  type RowPage,
  type RowSource,
  type TableAuditReport,
  TableAuditSourceError,
  type TableShape,
} from "../../audit/table-audit.js";
import * as opt from "../../core/options.js";

export interface SqliteTableAuditOptions extends RowAuditOptions {
  /** The database file; it must exist (it is opened read-only). */
  file: string;
  tableName: string;
}

export const SQLITE_TABLE_AUDIT_OPTIONS = opt.schemaFor<SqliteTableAuditOptions>()({
  file: opt.required(opt.string()),
  tableName: opt.required(opt.string()),
  ...ROW_AUDIT_FIELDS,
});

type Options = opt.Resolved<typeof SQLITE_TABLE_AUDIT_OPTIONS>;

/** Rows per page (progress and a turn of the event loop) when no pageLimit is given. */
const DEFAULT_PAGE_ROWS = 1000;

/** The little of better-sqlite3 the audit uses (an optional peer: loaded only when a SQLite table is audited). */
interface Statement {
  raw(on: boolean): Statement;
  safeIntegers(on: boolean): Statement;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown[]>;
}
interface Database {
  prepare(sql: string): Statement;
  close(): void;
}
type DatabaseConstructor = new (
  file: string,
  options: { readonly: boolean; fileMustExist: boolean },
) => Database;

const require = createRequire(import.meta.url);

/**
 * Reports the duplicated effects of a SQLite table, as `auditTable` does for DynamoDB: the file opened read-only,
 * one SELECT of the key, group and primary key columns read row by row (`iterate`: one snapshot, nothing buffered),
 * tallied a page at a time. Values keep SQLite's types (integers exact, as bigints). Without a declared primary key,
 * `rowid` names the rows. In rollback-journal mode the read holds a shared lock, so writers wait until it ends; in
 * WAL mode they do not. Throws OptionsError for bad options, TableAuditSourceError when the file, the table or a
 * column is missing.
 */
export async function auditSqliteTable(options: SqliteTableAuditOptions): Promise<TableAuditReport> {
  const o = opt.resolveOptions("auditSqliteTable", SQLITE_TABLE_AUDIT_OPTIONS, options);
  // The driver would say "unable to open database file"; the path is what the operator needs to see.
  if (!existsSync(o.file)) throw new TableAuditSourceError(`no SQLite database at ${o.file}`);
  const db = openReadOnly(o.file);
  try {
    return await auditRows(sqliteRows(o, db), o);
  } finally {
    db.close();
  }
}

function openReadOnly(file: string): Database {
  let Driver: DatabaseConstructor;
  try {
    Driver = require("better-sqlite3") as DatabaseConstructor;
  } catch (cause) {
    throw new TableAuditSourceError("auditing a SQLite table needs better-sqlite3: npm i better-sqlite3", {
      cause,
    });
  }
  return new Driver(file, { readonly: true, fileMustExist: true });
}

function sqliteRows(o: Options, db: Database): RowSource {
  return {
    engine: "sqlite",
    segments: 1,
    consistentRead: true,
    describe: async () => describeSqlite(o, db),
    read: (shape, on) => readRows(o, db, shape, on),
    estimatedReadUnits: () => null,
  };
}

function describeSqlite(o: Options, db: Database): TableShape {
  const table = db
    .prepare("SELECT type FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')")
    .get(o.tableName);
  if (!table) throw new TableAuditSourceError(`no table ${JSON.stringify(o.tableName)} in ${o.file}`);
  const columns = db.prepare("SELECT name, pk FROM pragma_table_info(?)").all(o.tableName) as {
    name: string;
    pk: number;
  }[];
  const names = new Set(columns.map((c) => c.name));
  for (const column of [o.keyAttribute, o.groupByAttribute])
    if (column !== undefined && !names.has(column))
      throw new TableAuditSourceError(`no column ${JSON.stringify(column)} in table ${o.tableName}`);
  const primaryKey = columns
    .filter((c) => c.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((c) => c.name);
  return {
    table: o.tableName,
    primaryKey: primaryKey.length > 0 ? primaryKey : ["rowid"],
    estimatedRows: estimatedRows(o, db),
    tableSizeBytes: null,
  };
}

/** SQLite keeps no row count: the largest rowid is a cheap estimate (0 for WITHOUT ROWID tables and views). */
function estimatedRows(o: Options, db: Database): number {
  try {
    const max = db
      .prepare(`SELECT max(rowid) FROM ${quoteIdentifier(o.tableName)}`)
      .raw(true)
      .get() as [number | null];
    return max[0] ?? 0;
  } catch {
    return 0;
  }
}

async function readRows(
  o: Options,
  db: Database,
  shape: TableShape,
  on: { page(page: RowPage): void; segmentDone(): void },
): Promise<void> {
  const columns = [o.keyAttribute, o.groupByAttribute ?? o.keyAttribute, ...shape.primaryKey];
  const statement = db
    .prepare(`SELECT ${columns.map(quoteIdentifier).join(", ")} FROM ${quoteIdentifier(o.tableName)}`)
    .raw(true)
    .safeIntegers(true);
  const pageRows = o.pageLimit ?? DEFAULT_PAGE_ROWS;
  let rows: AuditRow[] = [];
  let scanned = 0;
  let pages = 0;
  for (const values of statement.iterate()) {
    scanned++;
    const key = sqlValueText(values[0]);
    if (key !== undefined) {
      const group = o.groupByAttribute === undefined ? undefined : sqlValueText(values[1]);
      const primaryKey = shape.primaryKey.map((_, i) => sqlValueText(values[2 + i]) ?? "S");
      rows.push([key, group, compositeKeyText(primaryKey)]);
    }
    if (scanned === pageRows) {
      on.page({ rows, scanned });
      pages++;
      rows = [];
      scanned = 0;
      // The read is synchronous: let the progress bar draw and an abort land between pages.
      await nextTurn();
      o.signal?.throwIfAborted();
    }
  }
  // An empty table is one empty page, as on the other engines.
  if (scanned > 0 || pages === 0) on.page({ rows, scanned });
  on.segmentDone();
}
