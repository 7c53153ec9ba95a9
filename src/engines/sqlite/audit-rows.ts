import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { sqlValueText } from "../../audit/attribute-text.js";
import {
  auditSqlTable,
  SQL_TABLE_AUDIT_FIELDS,
  type SqlTableAuditOptions,
  type SqlTableFacts,
} from "../../audit/sql-table.js";
import {
  nextTurn,
  quoteIdentifier,
  type TableAuditReport,
  TableAuditSourceError,
} from "../../audit/table-audit.js";
import * as opt from "../../core/options.js";

export interface SqliteTableAuditOptions extends SqlTableAuditOptions {
  /** The database file; it must exist (it is opened read-only). */
  file: string;
}

export const SQLITE_TABLE_AUDIT_OPTIONS = opt.schemaFor<SqliteTableAuditOptions>()({
  file: opt.required(opt.string()),
  ...SQL_TABLE_AUDIT_FIELDS,
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
    return await auditSqlTable(
      {
        engine: "sqlite",
        describe: async () => describeSqlite(o, db),
        read: (columns, page) => readRows(o, db, columns, page),
      },
      o,
    );
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

function describeSqlite(o: Options, db: Database): SqlTableFacts {
  const table = db
    .prepare("SELECT type FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')")
    .get(o.tableName);
  if (!table) throw new TableAuditSourceError(`no table ${JSON.stringify(o.tableName)} in ${o.file}`);
  const columns = db
    .prepare('SELECT name, nullif(pk, 0) AS "keyPosition" FROM pragma_table_info(?)')
    .all(o.tableName) as { name: string; keyPosition: number | null }[];
  return {
    table: o.tableName,
    columns,
    rowId: "rowid",
    estimatedRows: estimatedRows(o, db),
    tableSizeBytes: null,
    text: (_column, value) => sqlValueText(value),
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
  columns: readonly string[],
  page: (values: unknown[][]) => void,
): Promise<void> {
  const statement = db
    .prepare(`SELECT ${columns.map(quoteIdentifier).join(", ")} FROM ${quoteIdentifier(o.tableName)}`)
    .raw(true)
    .safeIntegers(true);
  const pageRows = o.pageLimit ?? DEFAULT_PAGE_ROWS;
  let values: unknown[][] = [];
  let pages = 0;
  for (const row of statement.iterate()) {
    values.push(row);
    if (values.length === pageRows) {
      page(values);
      pages++;
      values = [];
      // The read is synchronous: let the progress bar draw and an abort land between pages.
      await nextTurn();
      o.signal?.throwIfAborted();
    }
  }
  // An empty table is one empty page, as on the other engines.
  if (values.length > 0 || pages === 0) page(values);
}
