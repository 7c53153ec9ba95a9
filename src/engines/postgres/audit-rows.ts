import { compositeKeyText } from "../../audit/duplicate-tally.js";
import {
  type AuditRow,
  auditRows,
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
import type { PostgresClient, PostgresPool } from "./pool.js";

export interface PostgresTableAuditOptions extends RowAuditOptions {
  /** A `pg.Pool` (or anything with its `connect`): the audit holds one client for its transaction. */
  pool: PostgresPool;
  /** Default `public`. */
  schema?: string;
  tableName: string;
}

export const POSTGRES_TABLE_AUDIT_OPTIONS = opt.schemaFor<PostgresTableAuditOptions>()({
  pool: opt.required(
    opt.custom<PostgresPool>("a pg.Pool", (v) => typeof (v as PostgresPool | null)?.connect === "function"),
  ),
  schema: opt.string({ default: "public" }),
  tableName: opt.required(opt.string()),
  ...ROW_AUDIT_FIELDS,
});

type Options = opt.Resolved<typeof POSTGRES_TABLE_AUDIT_OPTIONS>;

/** Rows per FETCH when no pageLimit is given: a page of a few columns is a few hundred KB at most. */
const DEFAULT_FETCH_ROWS = 1000;
const CURSOR = "eonce_audit_rows";

/**
 * Reports the duplicated effects of a PostgreSQL table, as `auditTable` does for DynamoDB: one server-side cursor
 * (`DECLARE … NO SCROLL CURSOR`, `FETCH n`) in a read-only REPEATABLE READ transaction, so the rows come from one
 * snapshot, page by page, and only the key, group and primary key columns (as text) cross the wire. Without a
 * primary key, `ctid` names the rows. Throws OptionsError for bad options, TableAuditSourceError when the table or a
 * column is missing, node-postgres's error when the server refuses.
 */
export async function auditPostgresTable(options: PostgresTableAuditOptions): Promise<TableAuditReport> {
  const o = opt.resolveOptions("auditPostgresTable", POSTGRES_TABLE_AUDIT_OPTIONS, options);
  const client = await o.pool.connect();
  let broken: unknown;
  try {
    return await auditRows(postgresRows(o, client), o);
  } catch (error) {
    broken = error;
    throw error;
  } finally {
    // A client whose transaction failed mid-way goes back destroyed, not to the pool.
    client.release(broken instanceof Error ? broken : undefined);
  }
}

interface PostgresShape extends TableShape {
  /** Per column read: true when its type is numeric (its text is a number: `N`, else `S`). */
  numeric: Map<string, boolean>;
}

function postgresRows(o: Options, client: PostgresClient): RowSource {
  return {
    engine: "postgres",
    segments: 1,
    consistentRead: true,
    describe: () => describePostgres(o, client),
    read: (shape, on) => readCursor(o, client, shape as PostgresShape, on),
    estimatedReadUnits: () => null,
  };
}

/** The table's oid and estimates, its columns' type categories, its primary key (in key order). */
async function describePostgres(o: Options, client: PostgresClient): Promise<PostgresShape> {
  const name = `${o.schema}.${o.tableName}`;
  const table = await client.query<{ oid: number; rows: string; bytes: string | null }>(
    `SELECT c.oid, greatest(c.reltuples, 0)::bigint AS rows,
            CASE WHEN c.relkind IN ('r', 'm', 'p') THEN pg_table_size(c.oid) END AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`,
    [o.schema, o.tableName],
  );
  const found = table.rows[0];
  if (!found) throw new TableAuditSourceError(`no table ${name} in this PostgreSQL database`);
  const columns = await client.query<{ name: string; category: string; key: number | null }>(
    `SELECT a.attname AS name, t.typcategory AS category, array_position(i.indkey::int2[], a.attnum) AS key
       FROM pg_attribute a
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`,
    [found.oid],
  );
  const numeric = new Map(columns.rows.map((c) => [c.name, c.category === "N"]));
  for (const column of [o.keyAttribute, o.groupByAttribute])
    if (column !== undefined && !numeric.has(column))
      throw new TableAuditSourceError(`no column ${JSON.stringify(column)} in table ${name}`);
  const primaryKey = columns.rows
    .filter((c) => c.key !== null)
    .sort((a, b) => (a.key as number) - (b.key as number))
    .map((c) => c.name);
  return {
    table: name,
    primaryKey: primaryKey.length > 0 ? primaryKey : ["ctid"],
    estimatedRows: Number(found.rows),
    tableSizeBytes: found.bytes === null ? null : Number(found.bytes),
    numeric,
  };
}

/** The cursor's pages, each turned into the tally's rows; the transaction ends however the read ends. */
async function readCursor(
  o: Options,
  client: PostgresClient,
  shape: PostgresShape,
  on: { page(page: RowPage): void; segmentDone(): void },
): Promise<void> {
  const columns = [o.keyAttribute, o.groupByAttribute ?? o.keyAttribute, ...shape.primaryKey];
  const select = columns.map((c) => `${quoteIdentifier(c)}::text`).join(", ");
  const fetchRows = o.pageLimit ?? DEFAULT_FETCH_ROWS;
  const toRow = rowMaker(o, shape);
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  try {
    await client.query(
      `DECLARE ${CURSOR} NO SCROLL CURSOR FOR SELECT ${select} FROM ${quoteIdentifier(o.schema)}.${quoteIdentifier(o.tableName)}`,
    );
    for (;;) {
      o.signal?.throwIfAborted();
      const page = await client.query<unknown[]>({
        text: `FETCH ${fetchRows} FROM ${CURSOR}`,
        rowMode: "array",
      });
      const rows: AuditRow[] = [];
      for (const values of page.rows) {
        const row = toRow(values as (string | null)[]);
        if (row) rows.push(row);
      }
      on.page({ rows, scanned: page.rows.length });
      if (page.rows.length < fetchRows) break;
    }
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
  on.segmentDone();
}

/** A fetched row (key, group, primary key columns, as text or NULL) → the tally's row; undefined without a key. */
function rowMaker(o: Options, shape: PostgresShape) {
  const text = (column: string, value: string | null) =>
    value === null ? undefined : `${shape.numeric.get(column) ? "N" : "S"}${value}`;
  return (values: (string | null)[]): AuditRow | undefined => {
    const key = text(o.keyAttribute, values[0] ?? null);
    if (key === undefined) return undefined;
    const group = o.groupByAttribute === undefined ? undefined : text(o.groupByAttribute, values[1] ?? null);
    const primaryKey = shape.primaryKey.map((c, i) => text(c, values[2 + i] ?? null) ?? "S");
    return [key, group, compositeKeyText(primaryKey)];
  };
}
