import {
  auditSqlTable,
  SQL_TABLE_AUDIT_FIELDS,
  type SqlTableAuditOptions,
  type SqlTableFacts,
} from "../../audit/sql-table.js";
import { quoteIdentifier, type TableAuditReport, TableAuditSourceError } from "../../audit/table-audit.js";
import * as opt from "../../core/options.js";
import type { PostgresClient, PostgresPool } from "./pool.js";

export interface PostgresTableAuditOptions extends SqlTableAuditOptions {
  /** A `pg.Pool` (or anything with its `connect`): the audit holds one client for its transaction. */
  pool: PostgresPool;
  /** Default `public`. */
  schema?: string;
}

export const POSTGRES_TABLE_AUDIT_OPTIONS = opt.schemaFor<PostgresTableAuditOptions>()({
  pool: opt.required(
    opt.custom<PostgresPool>("a pg.Pool", (v) => typeof (v as PostgresPool | null)?.connect === "function"),
  ),
  schema: opt.string({ default: "public" }),
  ...SQL_TABLE_AUDIT_FIELDS,
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
    return await auditSqlTable(
      {
        engine: "postgres",
        describe: () => describePostgres(o, client),
        read: (columns, page) => readCursor(o, client, columns, page),
      },
      o,
    );
  } catch (error) {
    broken = error;
    throw error;
  } finally {
    // A client whose transaction failed mid-way goes back destroyed, not to the pool.
    client.release(broken instanceof Error ? broken : undefined);
  }
}

/** The table's oid and estimates, its columns' type categories, its primary key (in key order). */
async function describePostgres(o: Options, client: PostgresClient): Promise<SqlTableFacts> {
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
  const columns = await client.query<{ name: string; category: string; keyPosition: number | null }>(
    `SELECT a.attname AS name, t.typcategory AS category,
            array_position(i.indkey::int2[], a.attnum) AS "keyPosition"
       FROM pg_attribute a
       JOIN pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`,
    [found.oid],
  );
  // Values cross the wire as text; a numeric column's text is a number (`N`), any other's a string (`S`).
  const numeric = new Map(columns.rows.map((c) => [c.name, c.category === "N"]));
  return {
    table: name,
    columns: columns.rows,
    rowId: "ctid",
    estimatedRows: Number(found.rows),
    tableSizeBytes: found.bytes === null ? null : Number(found.bytes),
    text: (column, value) =>
      value === null || value === undefined ? undefined : `${numeric.get(column) ? "N" : "S"}${value}`,
  };
}

/** The cursor's pages; the transaction ends however the read ends. */
async function readCursor(
  o: Options,
  client: PostgresClient,
  columns: readonly string[],
  page: (values: unknown[][]) => void,
): Promise<void> {
  const select = columns.map((c) => `${quoteIdentifier(c)}::text`).join(", ");
  const fetchRows = o.pageLimit ?? DEFAULT_FETCH_ROWS;
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  try {
    await client.query(
      `DECLARE ${CURSOR} NO SCROLL CURSOR FOR SELECT ${select} FROM ${quoteIdentifier(o.schema)}.${quoteIdentifier(o.tableName)}`,
    );
    for (;;) {
      o.signal?.throwIfAborted();
      const fetched = await client.query<unknown[]>({
        text: `FETCH ${fetchRows} FROM ${CURSOR}`,
        rowMode: "array",
      });
      page(fetched.rows);
      if (fetched.rows.length < fetchRows) break;
    }
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}
