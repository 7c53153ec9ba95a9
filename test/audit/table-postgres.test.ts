import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { TableAuditReport } from "../../src/audit/table-audit.js";
import { registerAudit } from "../../src/cli/audit.js";
import { registerAuditTable } from "../../src/cli/audit-table.js";
import { auditPostgresTable } from "../../src/engines/postgres/audit-rows.js";
import type { PostgresPool } from "../../src/engines/postgres/pool.js";
import { type CliRun, runCli } from "../kit/cli.js";
import { POSTGRES_URL, type TestDatabase, testDatabase } from "../kit/postgres.js";
import {
  ORDERS_BY_ORDER,
  ordersRows,
  RECORDS_BY_SEQUENCER,
  RECORDS_BY_SEQUENCER_WITHIN_FILENAME,
  RECORDS_EXAMPLES,
  recordsRows,
} from "./seed-rows.js";

let db: TestDatabase;

/** Rows in one INSERT; a property a row lacks is NULL, as a missing attribute. */
async function insert(table: string, columns: Record<string, string>, rows: Record<string, unknown>[]) {
  const names = Object.keys(columns);
  const values = rows.flatMap((r) => names.map((n) => r[n] ?? null));
  const tuples = rows.map((_, i) => `(${names.map((_, j) => `$${i * names.length + j + 1}`).join(", ")})`);
  await db.pool.query(
    `INSERT INTO "${db.schema}".${table} (${Object.values(columns).join(", ")}) VALUES ${tuples.join(", ")}`,
    values,
  );
}

beforeAll(async () => {
  db = await testDatabase("audit");
  const q = (sql: string) => db.pool.query(sql.replaceAll("@", `"${db.schema}".`));
  // What the naive pipelines create: a generated id per row, nothing unique about the effect.
  await q(`CREATE TABLE @records (id text PRIMARY KEY, bucket text, filename text, sequencer text, size integer,
    processed_at timestamptz NOT NULL DEFAULT now())`);
  await q(`CREATE TABLE @charges (charge_id text PRIMARY KEY, order_id text NOT NULL, customer_id text NOT NULL,
    amount_cents integer NOT NULL, charged_at timestamptz NOT NULL DEFAULT now())`);
  await q("CREATE TABLE @clean (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, sequencer text)");
  await q(
    `CREATE TABLE @composite (pk text, sk integer, n numeric, "Odd ""name""" text, PRIMARY KEY (sk, pk))`,
  );
  await q("CREATE TABLE @keyless (order_id text, note text)");
  await insert(
    "records",
    { id: "id", sequencer: "sequencer", filename: "filename", size: "size" },
    recordsRows(),
  );
  await insert(
    "charges",
    { chargeId: "charge_id", orderId: "order_id", customerId: "customer_id", amountCents: "amount_cents" },
    ordersRows(),
  );
  await q(`INSERT INTO @clean (sequencer) SELECT 'S' || i FROM generate_series(1, 20) i`);
  await q(
    `INSERT INTO @composite VALUES ('a', 1, 1, 'x'), ('a', 2, 1.5, 'x'), ('b', 1, 1, 'y'), ('b', 2, 2, NULL)`,
  );
  await q(`INSERT INTO @keyless VALUES ('o-1', 'a'), ('o-1', 'b'), ('o-2', 'c')`);
});

afterAll(() => db?.close());

const ids = (e: { primaryKeys: Record<string, unknown>[] }) => e.primaryKeys.map((k) => k.id).sort();

/** A pool that records the statements its clients run, to see how the audit reads. */
function recordingPool(pool: pg.Pool): { pool: PostgresPool; statements: string[] } {
  const statements: string[] = [];
  return {
    statements,
    pool: {
      query: pool.query.bind(pool) as PostgresPool["query"],
      connect: async () => {
        const client = await pool.connect();
        return {
          query: ((config: string | { text: string }, params?: unknown[]) => {
            statements.push(typeof config === "string" ? config : config.text);
            return client.query(config as string, params);
          }) as pg.PoolClient["query"],
          release: (destroy?: boolean | Error) => client.release(destroy),
        };
      },
    },
  };
}

describe("auditPostgresTable: records (same upload sequencer, several rows)", () => {
  let report: TableAuditReport;
  let statements: string[];
  const progress: { pages: number; scannedCount: number }[] = [];

  beforeAll(async () => {
    const recording = recordingPool(db.pool);
    statements = recording.statements;
    report = await auditPostgresTable({
      pool: recording.pool,
      schema: db.schema,
      tableName: "records",
      keyAttribute: "sequencer",
      pageLimit: 4,
      onProgress: (p) => progress.push(p),
    });
  });

  it("counts exactly what the DynamoDB audit counts on the same rows", () => {
    expect(report).toMatchObject({
      engine: "postgres",
      table: `${db.schema}.records`,
      primaryKey: ["id"],
      ...RECORDS_BY_SEQUENCER,
    });
    expect(report.examples.map((e) => [e.key, e.rows])).toEqual(RECORDS_EXAMPLES);
    expect(ids(report.examples[0]!)).toEqual(["r0-0", "r0-1", "r0-2", "r0-3"]);
    expect(ids(report.examples[2]!)).toEqual(["r9-0", "r9-nofile-0", "r9-nofile-1"]);
  });

  it("reads through one cursor in a read-only snapshot, pageLimit rows a FETCH: the table is never loaded whole", () => {
    expect(statements[0]).toMatch(/^SELECT c\.oid/);
    expect(statements).toContain("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const declare = statements.find((s) => s.startsWith("DECLARE"));
    expect(declare).toBe(
      `DECLARE eonce_audit_rows NO SCROLL CURSOR FOR SELECT "sequencer"::text, "sequencer"::text, "id"::text ` +
        `FROM "${db.schema}"."records"`,
    );
    // 45 rows, 4 a FETCH: 11 full pages and the last one (1 row) that ends the read.
    expect(statements.filter((s) => s === "FETCH 4 FROM eonce_audit_rows")).toHaveLength(12);
    expect(statements.at(-1)).toBe("COMMIT");
    expect(report.pages).toBe(12);
    expect(progress.at(-1)).toMatchObject({ pages: 12, scannedCount: 45, segmentsDone: 1, segments: 1 });
  });

  it("reports what PostgreSQL estimates: no read units", () => {
    expect(report).toMatchObject({ segments: 1, consistentRead: true, estimatedReadUnits: null });
    expect(report.consumedReadUnits).toBeNull();
    expect(report.tableSizeBytes).toBeGreaterThan(0);
  });

  it("scopes effects to a group column (NULL: a group of its own)", async () => {
    const r = await auditPostgresTable({
      pool: db.pool,
      schema: db.schema,
      tableName: "records",
      keyAttribute: "sequencer",
      groupByAttribute: "filename",
    });
    expect(r).toMatchObject(RECORDS_BY_SEQUENCER_WITHIN_FILENAME);
    expect(r.pages).toBe(1);
  });
});

describe("auditPostgresTable: key types and primary keys", () => {
  it("numeric columns are numbers, a composite primary key is reported in key order", async () => {
    const r = await auditPostgresTable({
      pool: db.pool,
      schema: db.schema,
      tableName: "composite",
      keyAttribute: "n",
    });
    expect(r).toMatchObject({ primaryKey: ["sk", "pk"], rowsRead: 4, effects: 3, duplicatedEffects: 1 });
    expect(r.examples).toEqual([
      {
        key: 1,
        rows: 2,
        primaryKeys: [
          { sk: 1, pk: "a" },
          { sk: 1, pk: "b" },
        ],
      },
    ]);
  });

  it("any column name works (quoted); a table without a primary key is named by ctid", async () => {
    const odd = await auditPostgresTable({
      pool: db.pool,
      schema: db.schema,
      tableName: "composite",
      keyAttribute: 'Odd "name"',
    });
    expect(odd).toMatchObject({ rowsRead: 3, rowsWithoutKey: 1, duplicatedEffects: 1 });
    const keyless = await auditPostgresTable({
      pool: db.pool,
      schema: db.schema,
      tableName: "keyless",
      keyAttribute: "order_id",
    });
    expect(keyless).toMatchObject({ primaryKey: ["ctid"], duplicatedEffects: 1, extraRows: 1 });
    expect(keyless.examples[0]!.primaryKeys).toEqual([{ ctid: "(0,1)" }, { ctid: "(0,2)" }]);
  });

  it("a missing table or column is a TableAuditSourceError; options are checked first", async () => {
    const base = { pool: db.pool, schema: db.schema, keyAttribute: "sequencer" };
    await expect(auditPostgresTable({ ...base, tableName: "nope" })).rejects.toThrow(
      `no table ${db.schema}.nope in this PostgreSQL database`,
    );
    await expect(
      auditPostgresTable({ ...base, tableName: "records", groupByAttribute: "file" }),
    ).rejects.toThrow(`no column "file" in table ${db.schema}.records`);
    await expect(
      auditPostgresTable({ ...base, tableName: "records", segments: 2 } as unknown as Parameters<
        typeof auditPostgresTable
      >[0]),
    ).rejects.toThrow(/unknown option "segments"/);
  });

  it("an abort ends the transaction and gives its client back", async () => {
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await expect(
      auditPostgresTable({
        ...{ pool: db.pool, schema: db.schema },
        tableName: "records",
        keyAttribute: "id",
        signal: controller.signal,
      }),
    ).rejects.toThrow("stop");
    expect(db.pool.totalCount - db.pool.idleCount).toBe(0);
  });
});

/** `eonce audit table …` in this process, as src/cli/main.ts runs it. */
const eonce = (...args: string[]): Promise<CliRun> =>
  runCli((program) => registerAuditTable(registerAudit(program)), ["audit", "table", ...args]);

describe("eonce audit table --engine postgres", () => {
  const on = (...args: string[]) =>
    eonce(...args, "--engine", "postgres", "--database-url", POSTGRES_URL, "--schema", db.schema);

  it("charges (same order id, several charges): exit 1 and the JSON report", async () => {
    const run = await on("charges", "--key", "order_id", "--json", "--page-limit", "7");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(1);
    const r = JSON.parse(run.stdout) as TableAuditReport;
    expect(r).toMatchObject({ engine: "postgres", primaryKey: ["charge_id"], pages: 16, ...ORDERS_BY_ORDER });
    expect(r.examples.map((e) => [e.key, e.rows])).toEqual([
      ["order-0040", 3],
      ["order-0010", 2],
      ["order-0020", 2],
      ["order-0030", 2],
    ]);
  });

  it("records per file: the human report", async () => {
    const run = await on("records", "--key", "sequencer", "--group-by", "filename");
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `table ${db.schema}.records (primary key id), effect key sequencer within a filename`,
    );
    expect(run.stdout).toMatch(
      /\nread 45 rows through one cursor in one snapshot \(repeatable read, read only\), 1 page,/,
    );
    expect(run.stdout).toContain("rows read (holding sequencer): 40; without sequencer: 5");
    expect(run.stdout).toContain(
      "effects (distinct sequencer within a filename): 32; held by more than one row: 5",
    );
    expect(run.stdout).toContain("DUPLICATES: 5 effects have more than one row, 8 rows too many (exit 1)");
  });

  it("a table without duplicates: exit 0; DATABASE_URL is the default connection", async () => {
    vi.stubEnv("DATABASE_URL", POSTGRES_URL);
    try {
      const run = await eonce("clean", "--key", "sequencer", "--engine", "postgres", "--schema", db.schema);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("no duplicates: every effect has one row (exit 0)");
      expect(run.stdout).toContain("rows read (holding sequencer): 20; without sequencer: 0");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it.each([
    [
      "a missing table",
      ["nope", "--key", "k"],
      /^eonce audit table: cannot audit nope: no table \w+\.nope in this/,
    ],
    [
      "a missing column",
      ["records", "--key", "seq"],
      /cannot audit records: no column "seq" in table \w+\.records\n$/,
    ],
    [
      "a DynamoDB flag",
      ["records", "--key", "k", "--segments", "2"],
      /--segments is not for --engine postgres/,
    ],
    [
      "--consistent-read",
      ["records", "--key", "k", "--consistent-read"],
      /--consistent-read is not for --engine/,
    ],
    [
      "--endpoint",
      ["records", "--key", "k", "--endpoint", "http://x"],
      /--endpoint is not for --engine postgres/,
    ],
    ["--file", ["records", "--key", "k", "--file", "x.db"], /--file is not for --engine postgres/],
  ])("exit 2: %s", async (_, args, message) => {
    const run = await on(...(args as string[]));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message as RegExp);
  });

  it("exit 2: a server that refuses (the SQLSTATE named)", async () => {
    const url = new URL(POSTGRES_URL);
    url.pathname = "/no_such_database_here";
    const run = await eonce("records", "--key", "k", "--engine", "postgres", "--database-url", url.href);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^eonce audit table: cannot audit records: PostgreSQL 3D000: database .* does not exist\n$/,
    );
  });

  it("--schema is PostgreSQL's: refused for DynamoDB", async () => {
    const run = await eonce("records", "--key", "k", "--schema", "s");
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--schema is not for --engine dynamodb/);
  });
});
