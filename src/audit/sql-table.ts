import * as opt from "../core/options.js";
import { compositeKeyText } from "./duplicate-tally.js";
import {
  type AuditRow,
  auditRows,
  type ResolvedRowAuditOptions,
  ROW_AUDIT_FIELDS,
  type RowAuditOptions,
  type RowPage,
  type TableAuditReport,
  TableAuditSourceError,
  type TableShape,
} from "./table-audit.js";

/**
 * What the SQL engines' row sources (PostgreSQL's cursor, SQLite's statement) share: a table named by its options,
 * read as one part in one snapshot, the same columns read (key, group, primary key), the same checks of them, and
 * the same tally rows made of the values. Each engine says what its table is, reads the values and types them.
 */

/** The options of a SQL engine's table audit, besides its connection. */
export interface SqlTableAuditOptions extends RowAuditOptions {
  tableName: string;
}

/** The fields of SqlTableAuditOptions, for each engine's schema. */
export const SQL_TABLE_AUDIT_FIELDS = {
  tableName: opt.required(opt.string()),
  ...ROW_AUDIT_FIELDS,
};

/** What a SQL engine tells of its table before the audit reads it. */
export interface SqlTableFacts {
  /** The table as the report names it (`schema.table` on PostgreSQL). */
  table: string;
  /** Every column, with its place in the primary key (from 1; null when it is not in it). */
  columns: readonly { name: string; keyPosition: number | null }[];
  /** What names a row of a table without a primary key (PostgreSQL's `ctid`, SQLite's `rowid`). */
  rowId: string;
  /** The engine's estimate of the row count; 0 when it has none. */
  estimatedRows: number;
  tableSizeBytes: number | null;
  /** A value read from `column` as the tally's text (its type's letter, then the value); undefined for NULL. */
  text(column: string, value: unknown): string | undefined;
}

/** A SQL engine's part of the audit. */
export interface SqlTable {
  /** The engine's name (src/engines/registry.ts). */
  readonly engine: string;
  /** Throws TableAuditSourceError when the table does not exist. */
  describe(): Promise<SqlTableFacts>;
  /** Reads the `columns` of every row in one snapshot, handing on each page of values as it is read. */
  read(columns: readonly string[], page: (values: readonly (readonly unknown[])[]) => void): Promise<void>;
}

/** The table's shape, and how its values read as text. */
interface SqlShape extends TableShape {
  text: SqlTableFacts["text"];
}

/**
 * Reports the duplicated effects of a SQL table (auditRows): one part, consistent (one snapshot), costing no read
 * units. Throws TableAuditSourceError when the table, or a column the audit names, is missing; else what `table`
 * throws.
 */
export function auditSqlTable(table: SqlTable, o: ResolvedRowAuditOptions): Promise<TableAuditReport> {
  return auditRows(
    {
      engine: table.engine,
      segments: 1,
      consistentRead: true,
      describe: async () => shapeOf(o, await table.describe()),
      read: async (shape, on) => {
        const s = shape as SqlShape;
        // The key again when there is no group: every page has the same columns.
        const columns = [o.keyAttribute, o.groupByAttribute ?? o.keyAttribute, ...s.primaryKey];
        await table.read(columns, (values) => on.page(pageOf(o, s, values)));
        on.segmentDone();
      },
      estimatedReadUnits: () => null,
    },
    o,
  );
}

/** The facts checked (the audit's columns exist) and the primary key in key order, else the row id. */
function shapeOf(o: ResolvedRowAuditOptions, facts: SqlTableFacts): SqlShape {
  const names = new Set(facts.columns.map((c) => c.name));
  for (const column of [o.keyAttribute, o.groupByAttribute])
    if (column !== undefined && !names.has(column))
      throw new TableAuditSourceError(`no column ${JSON.stringify(column)} in table ${facts.table}`);
  const primaryKey = facts.columns
    .filter((c) => c.keyPosition !== null)
    .sort((a, b) => (a.keyPosition as number) - (b.keyPosition as number))
    .map((c) => c.name);
  return {
    table: facts.table,
    primaryKey: primaryKey.length > 0 ? primaryKey : [facts.rowId],
    estimatedRows: facts.estimatedRows,
    tableSizeBytes: facts.tableSizeBytes,
    text: facts.text,
  };
}

/** A page of values (key, group, primary key columns) as the tally's rows: a row without a key gives none. */
function pageOf(
  o: ResolvedRowAuditOptions,
  shape: SqlShape,
  values: readonly (readonly unknown[])[],
): RowPage {
  const rows: AuditRow[] = [];
  for (const row of values) {
    const key = shape.text(o.keyAttribute, row[0]);
    if (key === undefined) continue;
    const group = o.groupByAttribute === undefined ? undefined : shape.text(o.groupByAttribute, row[1]);
    const primaryKey = shape.primaryKey.map((c, i) => shape.text(c, row[2 + i]) ?? "S");
    rows.push([key, group, compositeKeyText(primaryKey)]);
  }
  return { rows, scanned: values.length };
}
