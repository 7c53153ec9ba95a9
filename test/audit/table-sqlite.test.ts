import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TableAuditReport } from "../../src/audit/table-audit.js";
import { registerAudit } from "../../src/cli/audit.js";
import { registerAuditTable } from "../../src/cli/audit-table.js";
import { auditSqliteTable } from "../../src/engines/sqlite/audit-rows.js";
import { type CliRun, runCli } from "../kit/cli.js";
import {
  ORDERS_BY_ORDER,
  ordersRows,
  RECORDS_BY_SEQUENCER,
  RECORDS_BY_SEQUENCER_WITHIN_FILENAME,
  RECORDS_EXAMPLES,
  recordsRows,
} from "./seed-rows.js";

const dir = mkdtempSync(join(tmpdir(), "eonce-audit-sqlite-"));
const file = join(dir, "pipeline.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Rows in one transaction; a property a row lacks is NULL, as a missing attribute. */
function insert(
  db: Database.Database,
  table: string,
  columns: Record<string, string>,
  rows: Record<string, unknown>[],
) {
  const names = Object.keys(columns);
  const statement = db.prepare(
    `INSERT INTO ${table} (${Object.values(columns).join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
  );
  db.transaction(() => {
    for (const r of rows) statement.run(...names.map((n) => r[n] ?? null));
  })();
}

beforeAll(() => {
  const db = new Database(file);
  // What the naive pipelines create: a generated id per row, nothing unique about the effect.
  db.exec(`CREATE TABLE records (id TEXT PRIMARY KEY, bucket TEXT, filename TEXT, sequencer TEXT, size INTEGER);
    CREATE TABLE charges (charge_id TEXT PRIMARY KEY, order_id TEXT NOT NULL, customer_id TEXT, amount_cents INTEGER);
    CREATE TABLE clean (id INTEGER PRIMARY KEY, sequencer TEXT);
    CREATE TABLE composite (pk TEXT, sk INTEGER, n, PRIMARY KEY (sk, pk)) WITHOUT ROWID;
    CREATE TABLE keyless (order_id TEXT, note TEXT);`);
  insert(
    db,
    "records",
    { id: "id", sequencer: "sequencer", filename: "filename", size: "size" },
    recordsRows(),
  );
  insert(
    db,
    "charges",
    { chargeId: "charge_id", orderId: "order_id", customerId: "customer_id", amountCents: "amount_cents" },
    ordersRows(),
  );
  db.exec(
    "WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20) INSERT INTO clean (sequencer) SELECT 'S' || n FROM i",
  );
  // A column without a type keeps each value's: 1 and 1.0 are one value, '1' another, 2^62 exact.
  const big = 2n ** 62n;
  db.prepare("INSERT INTO composite VALUES (?, ?, ?)").safeIntegers(true).run("x", 9n, big);
  db.exec(
    `INSERT INTO composite VALUES ('a', 1, 1), ('a', 2, '1'), ('b', 1, 1.0), ('b', 2, 2), ('y', 9, ${big})`,
  );
  db.exec("INSERT INTO keyless VALUES ('o-1', 'a'), ('o-1', 'b'), ('o-2', 'c')");
  db.close();
});

const ids = (e: { primaryKeys: Record<string, unknown>[] }) => e.primaryKeys.map((k) => k.id).sort();

describe("auditSqliteTable", () => {
  let report: TableAuditReport;
  const progress: { pages: number; scannedCount: number }[] = [];
  beforeAll(async () => {
    report = await auditSqliteTable({
      file,
      tableName: "records",
      keyAttribute: "sequencer",
      pageLimit: 4,
      onProgress: (p) => progress.push(p),
    });
  });

  it("counts exactly what the DynamoDB audit counts on the same rows", () => {
    expect(report).toMatchObject({
      engine: "sqlite",
      table: "records",
      primaryKey: ["id"],
      ...RECORDS_BY_SEQUENCER,
    });
    expect(report.examples.map((e) => [e.key, e.rows])).toEqual(RECORDS_EXAMPLES);
    expect(ids(report.examples[0]!)).toEqual(["r0-0", "r0-1", "r0-2", "r0-3"]);
  });

  it("reads a page at a time (pageLimit rows), with the estimates SQLite has", () => {
    // 45 rows, 4 a page: 11 full pages and the last one.
    expect(report.pages).toBe(12);
    expect(progress.at(-1)).toMatchObject({
      pages: 12,
      scannedCount: 45,
      segmentsDone: 1,
      estimatedRows: 45,
    });
    expect(report).toMatchObject({
      segments: 1,
      tableSizeBytes: null,
      estimatedReadUnits: null,
      consumedReadUnits: null,
    });
  });

  it("scopes effects to a group column (NULL: a group of its own)", async () => {
    const r = await auditSqliteTable({
      file,
      tableName: "records",
      keyAttribute: "sequencer",
      groupByAttribute: "filename",
    });
    expect(r).toMatchObject(RECORDS_BY_SEQUENCER_WITHIN_FILENAME);
  });

  it("keeps SQLite's value types and reports a composite primary key in key order", async () => {
    const r = await auditSqliteTable({ file, tableName: "composite", keyAttribute: "n" });
    expect(r).toMatchObject({ primaryKey: ["sk", "pk"], rowsRead: 6, effects: 4, duplicatedEffects: 2 });
    expect(r.examples).toEqual([
      {
        key: 1,
        rows: 2,
        primaryKeys: [
          { sk: 1, pk: "a" },
          { sk: 1, pk: "b" },
        ],
      },
      // 2^62 is no exact JS number: it is reported as its digits.
      {
        key: "4611686018427387904",
        rows: 2,
        primaryKeys: [
          { sk: 9, pk: "x" },
          { sk: 9, pk: "y" },
        ],
      },
    ]);
    expect(r.estimatedRows).toBe(0); // WITHOUT ROWID: no estimate
  });

  it("a table without a primary key is named by rowid", async () => {
    const r = await auditSqliteTable({ file, tableName: "keyless", keyAttribute: "order_id" });
    expect(r).toMatchObject({ primaryKey: ["rowid"], duplicatedEffects: 1 });
    expect(r.examples[0]!.primaryKeys).toEqual([{ rowid: 1 }, { rowid: 2 }]);
  });

  it("a missing file, table or column is a TableAuditSourceError", async () => {
    await expect(
      auditSqliteTable({ file: join(dir, "nope.db"), tableName: "t", keyAttribute: "k" }),
    ).rejects.toThrow(`no SQLite database at ${join(dir, "nope.db")}`);
    await expect(auditSqliteTable({ file, tableName: "nope", keyAttribute: "k" })).rejects.toThrow(
      `no table "nope" in ${file}`,
    );
    await expect(auditSqliteTable({ file, tableName: "records", keyAttribute: "seq" })).rejects.toThrow(
      'no column "seq" in table records',
    );
  });
});

/** `eonce audit table …` in this process, as src/cli/main.ts runs it. */
const eonce = (...args: string[]): Promise<CliRun> =>
  runCli((program) => registerAuditTable(registerAudit(program)), ["audit", "table", ...args]);

describe("eonce audit table --engine sqlite", () => {
  it("charges (same order id, several charges): exit 1 and the JSON report", async () => {
    const run = await eonce("charges", "--key", "order_id", "--engine", "sqlite", "--file", file, "--json");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(1);
    const r = JSON.parse(run.stdout) as TableAuditReport;
    expect(r).toMatchObject({ engine: "sqlite", primaryKey: ["charge_id"], ...ORDERS_BY_ORDER });
    expect(r.examples[0]).toMatchObject({ key: "order-0040", rows: 3 });
  });

  it("the human report, and exit 0 on a clean table", async () => {
    const dup = await eonce("records", "--key", "sequencer", "--engine", "sqlite", "--file", file);
    expect(dup.code).toBe(1);
    expect(dup.stdout).toMatch(/\nread 45 rows in one statement \(one snapshot, read-only\), 1 page, /);
    expect(dup.stdout).toContain("DUPLICATES: 6 effects have more than one row, 10 rows too many (exit 1)");
    const clean = await eonce("clean", "--key", "sequencer", "--engine", "sqlite", "--file", file);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain("no duplicates: every effect has one row (exit 0)");
  });

  it.each([
    ["no --file", ["records", "--key", "k", "--engine", "sqlite"], /--engine sqlite needs --file <path>/],
    [
      "a missing file",
      ["records", "--key", "k", "--engine", "sqlite", "--file", "/nope.db"],
      /no SQLite database at \/nope\.db/,
    ],
    [
      "a PostgreSQL flag",
      ["records", "--key", "k", "--engine", "sqlite", "--file", "x", "--schema", "s"],
      /--schema is not for --engine sqlite/,
    ],
    [
      "--file without the engine",
      ["records", "--key", "k", "--file", "x"],
      /--file is not for --engine dynamodb/,
    ],
    [
      "an unknown engine",
      ["records", "--key", "k", "--engine", "mysql"],
      /argument 'mysql' is invalid\. Allowed choices are dynamodb, postgres, sqlite/,
    ],
  ])("exit 2: %s", async (_, args, message) => {
    const run = await eonce(...(args as string[]));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message as RegExp);
  });
});
