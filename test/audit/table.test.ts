import { randomUUID } from "node:crypto";
import { type DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { registerAudit } from "../../src/cli/audit.js";
import { registerAuditTable } from "../../src/cli/audit-table.js";
import { auditTable, type TableAuditReport } from "../../src/engines/dynamodb/audit-rows.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { batchPut } from "../kit/batch-write.js";
import { type CliRun, runCli } from "../kit/cli.js";
import { localDynamoDB } from "../kit/dynamodb.js";
import {
  ORDERS_BY_ORDER,
  ordersRows,
  RECORDS_BY_SEQUENCER,
  RECORDS_BY_SEQUENCER_WITHIN_FILENAME,
  RECORDS_EXAMPLES,
  recordsRows,
} from "./seed-rows.js";

const suffix = randomUUID().slice(0, 8);
const RECORDS = `audit-records-${suffix}`;
const ORDERS = `audit-orders-${suffix}`;
const CLEAN = `audit-clean-${suffix}`;
const COMPOSITE = `audit-composite-${suffix}`;

let client: DynamoDBClient;

beforeAll(async () => {
  client = localDynamoDB();
  await Promise.all([
    createTableIfMissing(client, RECORDS, "id"),
    createTableIfMissing(client, ORDERS, "chargeId"),
    createTableIfMissing(client, CLEAN, "id"),
    createTableIfMissing(client, COMPOSITE, "pk", "sk"),
  ]);
  await Promise.all([
    batchPut(client, RECORDS, recordsRows()),
    batchPut(client, ORDERS, ordersRows()),
    batchPut(
      client,
      CLEAN,
      Array.from({ length: 20 }, (_, i) => ({ id: `c${i}`, sequencer: `S${i}` })),
    ),
    batchPut(client, COMPOSITE, [
      { pk: "a", sk: "1", n: 1 },
      { pk: "a", sk: "2", n: "1" },
      { pk: "b", sk: "1", n: 1 },
      { pk: "b", sk: "2", n: 2 },
    ]),
  ]);
});

afterAll(() => client?.destroy());

const ids = (e: { primaryKeys: Record<string, unknown>[] }) => e.primaryKeys.map((k) => k.id).sort();

describe("auditTable: records (same upload sequencer, several rows)", () => {
  let report: TableAuditReport;
  const progress: { pages: number; segmentsDone: number }[] = [];

  beforeAll(async () => {
    report = await auditTable({
      client,
      tableName: RECORDS,
      keyAttribute: "sequencer",
      segments: 3,
      pageLimit: 4,
      onProgress: (p) => progress.push(p),
    });
  });

  it("counts rows read, rows without the key and rows scanned", () => {
    expect(report).toMatchObject({ scannedCount: 45, rowsRead: 40, rowsWithoutKey: 5, primaryKey: ["id"] });
  });

  it("counts effects, duplicated effects, extra rows and the shares of rows read", () => {
    expect(report).toMatchObject(RECORDS_BY_SEQUENCER);
  });

  it("lists the duplicated effects most rows first, then by value, with their rows' primary keys", () => {
    expect(report.examples.map((e) => [e.key, e.rows])).toEqual(RECORDS_EXAMPLES);
    expect(ids(report.examples[0]!)).toEqual(["r0-0", "r0-1", "r0-2", "r0-3"]);
    expect(ids(report.examples[2]!)).toEqual(["r9-0", "r9-nofile-0", "r9-nofile-1"]);
    expect(ids(report.examples[5]!)).toEqual(["r5-0", "r5-other"]);
  });

  it("pages through every segment (pagination forced by the page limit)", () => {
    // 45 rows in pages of at most 4 over 3 segments: at least 12 pages, every segment to its end.
    expect(report.pages).toBeGreaterThanOrEqual(12);
    expect(progress.at(-1)).toMatchObject({ segmentsDone: 3, segments: 3, rowsRead: 40, scannedCount: 45 });
  });

  it("gives the same tally with one segment and no page limit", async () => {
    const one = await auditTable({ client, tableName: RECORDS, keyAttribute: "sequencer", segments: 1 });
    const { wallMs: _a, pages: _b, segments: _c, consumedReadUnits: _d, ...rest } = one;
    const { wallMs: _e, pages: _f, segments: _g, consumedReadUnits: _h, ...expected } = report;
    expect(one.segments).toBe(1);
    expect(rest).toEqual({ ...expected, examples: rest.examples });
    expect(rest.examples.map((e) => [e.key, e.rows, ids(e)])).toEqual(
      report.examples.map((e) => [e.key, e.rows, ids(e)]),
    );
  });

  it("keeps at most keysPerEffect primary keys and examples effects", async () => {
    const r = await auditTable({
      client,
      tableName: RECORDS,
      keyAttribute: "sequencer",
      examples: 2,
      keysPerEffect: 2,
    });
    expect(r.examples.map((e) => [e.key, e.rows, e.primaryKeys.length])).toEqual([
      ["SEQ0", 4, 2],
      ["SEQ1", 3, 2],
    ]);
    for (const key of r.examples[0]!.primaryKeys) expect(["r0-0", "r0-1", "r0-2", "r0-3"]).toContain(key.id);
    expect(r.duplicatedEffects).toBe(6);
  });

  it("reads only the key, group and primary key attributes, and returns the consumed capacity", async () => {
    const inputs: unknown[] = [];
    const spy = {
      send: (command: { input: unknown }, options?: unknown) => {
        if (command instanceof ScanCommand) inputs.push(command.input);
        return client.send(command as ScanCommand, options as never);
      },
    } as unknown as DynamoDBClient;
    const r = await auditTable({ client: spy, tableName: RECORDS, keyAttribute: "sequencer", segments: 2 });
    expect(inputs[0]).toMatchObject({
      ProjectionExpression: "#a0, #a1",
      ExpressionAttributeNames: { "#a0": "sequencer", "#a1": "id" },
      FilterExpression: "attribute_exists(#a0)",
      TotalSegments: 2,
      ConsistentRead: false,
      ReturnConsumedCapacity: "TOTAL",
    });
    expect(r.consumedReadUnits).toBeGreaterThan(0);
    const consistent = await auditTable({
      client: spy,
      tableName: RECORDS,
      keyAttribute: "sequencer",
      consistentRead: true,
    });
    expect(inputs.at(-1)).toMatchObject({ ConsistentRead: true, TotalSegments: 4 });
    expect(r.estimatedReadUnits).toBeGreaterThan(0);
    expect(consistent.estimatedReadUnits).toBe(r.estimatedReadUnits! * 2);
    expect(consistent.consistentRead).toBe(true);
  });
});

describe("auditTable: records grouped by filename (effects scoped to the object key)", () => {
  let report: TableAuditReport;
  beforeAll(async () => {
    report = await auditTable({
      client,
      tableName: RECORDS,
      keyAttribute: "sequencer",
      groupByAttribute: "filename",
      segments: 4,
      pageLimit: 5,
    });
  });

  it("counts a key under two groups as two effects", () => {
    const { groups: _, ...counts } = RECORDS_BY_SEQUENCER_WITHIN_FILENAME;
    expect(report).toMatchObject({ ...counts, extraRowShare: 8 / 40 });
  });

  it("reports the groups read, those holding duplicates, rows without the group, the top groups", () => {
    expect(report.groups).toEqual(RECORDS_BY_SEQUENCER_WITHIN_FILENAME.groups);
    expect(report.examples.map((e) => [e.key, e.group, e.rows])).toEqual([
      ["SEQ0", "file-0.jpg", 4],
      ["SEQ1", "file-1.jpg", 3],
      ["SEQ2", "file-2.jpg", 2],
      ["SEQ3", "file-3.jpg", 2],
      ["SEQ9", null, 2],
    ]);
  });
});

describe("auditTable: key types and composite primary keys", () => {
  it("tells the number 1 from the string '1' and reports both key attributes", async () => {
    const r = await auditTable({
      client,
      tableName: COMPOSITE,
      keyAttribute: "n",
      segments: 2,
      pageLimit: 1,
    });
    expect(r).toMatchObject({ primaryKey: ["pk", "sk"], rowsRead: 4, effects: 3, duplicatedEffects: 1 });
    expect(r.examples).toHaveLength(1);
    expect(r.examples[0]).toMatchObject({ key: 1, rows: 2 });
    expect(r.examples[0]!.primaryKeys).toEqual(
      expect.arrayContaining([
        { pk: "a", sk: "1" },
        { pk: "b", sk: "1" },
      ]),
    );
  });

  it("throws the first failing segment's error", async () => {
    const failing = {
      send: (command: { input: { Segment?: number } }, options?: unknown) => {
        if (command instanceof ScanCommand && command.input.Segment === 1)
          return Promise.reject(new Error("segment 1 failed"));
        return client.send(command as ScanCommand, options as never);
      },
    } as unknown as DynamoDBClient;
    await expect(
      auditTable({ client: failing, tableName: RECORDS, keyAttribute: "sequencer", segments: 3 }),
    ).rejects.toThrow("segment 1 failed");
  });

  it("checks its options eagerly", async () => {
    await expect(auditTable({ client, tableName: RECORDS, keyAttribute: "" })).rejects.toThrow(
      /keyAttribute must be a non-empty string/,
    );
    await expect(
      auditTable({ client, tableName: RECORDS, keyAttribute: "sequencer", segments: 0 }),
    ).rejects.toThrow(/segments must be an integer from 1 to 1000/);
  });
});

/** `eonce audit table …` in this process, as src/cli/main.ts runs it (commander's errors exit 2). */
const eonce = (...args: string[]): Promise<CliRun> =>
  runCli((program) => registerAuditTable(registerAudit(program)), ["audit", "table", ...args]);

describe("eonce audit table", () => {
  const endpoint = () => inject("dynamodbEndpoint");
  beforeAll(() => {
    vi.stubEnv("AWS_ACCESS_KEY_ID", "local");
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "local");
    vi.stubEnv("AWS_REGION", "us-east-1");
    return () => vi.unstubAllEnvs();
  });

  it("orders (same order id, several charges): exit 1 and the JSON report", async () => {
    const run = await eonce(
      ORDERS,
      "--key",
      "orderId",
      "--endpoint",
      endpoint(),
      "--json",
      "--page-limit",
      "7",
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("");
    const r = JSON.parse(run.stdout) as TableAuditReport;
    expect(r).toMatchObject({
      engine: "dynamodb",
      table: ORDERS,
      ...ORDERS_BY_ORDER,
      segments: 4,
    });
    expect(r.examples.map((e) => [e.key, e.rows])).toEqual([
      ["order-0040", 3],
      ["order-0010", 2],
      ["order-0020", 2],
      ["order-0030", 2],
    ]);
    expect(r.examples[0]!.primaryKeys.map((k) => k.chargeId).sort()).toEqual([
      "ch-40-0",
      "ch-40-1",
      "ch-40-2",
    ]);
  });

  it("orders per customer: the human report", async () => {
    const run = await eonce(ORDERS, "--key", "orderId", "--group-by", "customerId", "--endpoint", endpoint());
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      "effects (distinct orderId within a customerId): 100; held by more than one row: 4",
    );
    expect(run.stdout).toContain("extra rows (beyond the first of each effect): 5 = 4.76 % of rows read");
    expect(run.stdout).toContain("groups (distinct customerId): 7; holding duplicates: 4");
    expect(run.stdout).toMatch(
      /\n {2}orderId "order-0040" customerId "c-5": 3 rows\n {4}chargeId="ch-40-\d", chargeId="ch-40-\d", chargeId="ch-40-\d"\n/,
    );
    expect(run.stdout).toContain("DUPLICATES: 4 effects have more than one row, 5 rows too many (exit 1)");
  });

  it("a table without duplicates: exit 0", async () => {
    const run = await eonce(CLEAN, "--key", "sequencer", "--endpoint", endpoint(), "--segments", "2");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("no duplicates: every effect has one row (exit 0)");
    expect(run.stdout).toContain("rows read (holding sequencer): 20; without sequencer: 0");
  });

  it("--progress draws on stderr even into a pipe; --json alone draws nothing", async () => {
    const shown = await eonce(CLEAN, "--key", "sequencer", "--endpoint", endpoint(), "--json", "--progress");
    expect(shown.code).toBe(0);
    expect(shown.stderr).toMatch(/scan .* 20\/~20 rows \| segments 4\/4/);
    expect(JSON.parse(shown.stdout)).toMatchObject({ duplicatedEffects: 0 });
    const quiet = await eonce(CLEAN, "--key", "sequencer", "--endpoint", endpoint(), "--json");
    expect(quiet.stderr).toBe("");
  });

  it.each([
    ["no --key", [CLEAN], /required option '--key <attr>' not specified/],
    [
      "an empty --key",
      [CLEAN, "--key", ""],
      /--key <attr>' argument '' is invalid\. must be a non-empty string/,
    ],
    ["--segments 0", [CLEAN, "--key", "k", "--segments", "0"], /must be an integer from 1 to 1000, got 0/],
    ["--examples -1", [CLEAN, "--key", "k", "--examples", "-1"], /must be a non-negative integer, got -1/],
    ["an unknown flag", [CLEAN, "--key", "k", "--bogus"], /unknown option '--bogus'/],
    ["an endpoint that is no URL", [CLEAN, "--key", "k", "--endpoint", "localhost"], /must be a URL/],
    ["no table", ["--key", "k"], /missing required argument 'table'/],
  ])("usage error (exit 2): %s", async (_, args, message) => {
    const run = await eonce(...(args as string[]));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message as RegExp);
  });

  it("a server that does not answer: exit 2", async () => {
    const run = await eonce(CLEAN, "--key", "k", "--endpoint", "http://127.0.0.1:1");
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^eonce audit table: cannot audit audit-clean-\w+: .*ECONNREFUSED/);
  });

  it("a table that does not exist: exit 2, one line naming the error", async () => {
    const run = await eonce(`missing-${suffix}`, "--key", "k", "--endpoint", endpoint());
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /^eonce audit table: cannot audit missing-\w+: ResourceNotFoundException: .*\n$/,
    );
  });
});
