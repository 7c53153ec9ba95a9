import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { scratchRoot } from "../../scripts/packed-project.mjs";
import {
  type CommandResult,
  prepareStarts,
  type ReadmeStart,
  reportProblems,
  runFlags,
  runStart,
  typecheckStarts,
} from "../../scripts/readme-starts.mjs";
import { dynamoDBClient } from "../../src/local/emulators/dynamodb-local.js";
import { scanTable } from "../../src/local/emulators/scan-table.js";
import { POSTGRES_URL } from "../kit/postgres.js";
import { wantsStore } from "../kit/store-names.js";

/**
 * The README's five-minute starts, as written there (scripts/readme-starts.mjs): the packed package in a new project,
 * every start's file type-checked, every command run (`eonce run` on the suite's DynamoDB Local, its tables renamed
 * apart), then the report's invariants and the rows each run left, counted here.
 */
const endpoint = inject("dynamodbEndpoint");
const suffix = randomUUID().slice(0, 8);
let dir: string;
let project: string;
let starts: ReadmeStart[];

const start = (name: string) => {
  const s = starts.find((x) => x.name === name);
  if (!s) throw new Error(`README.md has no start ${name}`);
  return s;
};
const eonceRun = (s: ReadmeStart) => s.commands.find((c) => c.startsWith("npx eonce run ")) ?? "";
const flag = (s: ReadmeStart, name: string) => runFlags(eonceRun(s)).get(name) ?? [];
const number = (s: ReadmeStart, name: string) => Number(flag(s, name)[0] ?? 0);

/** The last command's result, which must be the `eonce run`: exit 0, every invariant checked and passing. */
function expectClean(results: CommandResult[]) {
  const last = results.at(-1);
  expect(last?.command).toMatch(/^npx eonce run /);
  expect(reportProblems(last?.report), last?.stderr).toEqual([]);
  expect(last?.code, last?.stderr).toBe(0);
  return last?.report as NonNullable<CommandResult["report"]>;
}

beforeAll(async () => {
  if (!endpoint)
    throw new Error("test/docs/readme-starts.test.ts belongs in vitest.config.ts's INTEGRATION list");
  dir = await mkdtemp(join(await scratchRoot(), "eonce-readme-"));
  ({ project, starts } = await prepareStarts({ dir }));
}, 600_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

// Side by side: each start runs in its own folder, on tables (or a database) of its own; tsc only reads.
describe.concurrent("the README's five-minute starts, from the packed package", () => {
  it("type-check (strict, NodeNext, an ES module project)", async () => {
    const r = await typecheckStarts(project);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  }, 180_000);

  it("1. an S3 handler on DynamoDB: every invariant holds, one index row per key", async () => {
    const s = start("s3-dynamodb");
    const report = expectClean(await runStart(project, s, { dynamodbEndpoint: endpoint, suffix }));
    const uploads = number(s, "--generate") + number(s, "--reupload");
    expect(report).toMatchObject({ uploads, events: uploads });
    expect(report.invariants.map((c) => [c.id, c.status])).toEqual([
      ["I1", "pass"],
      ["I2", "pass"],
      ["I3", "pass"],
      ["I4", "pass"],
    ]);
    expect(report.deliveries).toBeGreaterThan(uploads); // the faults did happen
    const client = dynamoDBClient(endpoint);
    const table = `${flag(s, "--table")[0]?.split(":")[0]}-${suffix}`;
    const rows = await scanTable(client, table);
    client.destroy();
    expect(rows).toHaveLength(number(s, "--generate"));
    for (const row of rows)
      expect(row).toMatchObject({ pk: expect.any(String), sequencer: expect.any(String) });
  }, 300_000);

  it("2. inline state through s3Handler in mode apply: one row per upload, each its own event's", async () => {
    const s = start("inline-dynamodb");
    const report = expectClean(await runStart(project, s, { dynamodbEndpoint: endpoint, suffix }));
    const uploads = number(s, "--generate") + number(s, "--reupload");
    expect(report).toMatchObject({ uploads, events: uploads });
    expect(report.invariants.find((c) => c.id === "I1")?.detail).toMatch(/rows for \d+ events/);
    expect(report.invariants.filter((c) => c.status !== "pass")).toEqual([]);
    const client = dynamoDBClient(endpoint);
    const rows = await scanTable(client, `${flag(s, "--state-table")[0]}-${suffix}`);
    client.destroy();
    expect(rows).toHaveLength(uploads);
    expect(new Set(rows.map((r) => r.sequencer)).size).toBe(uploads);
  }, 300_000);

  it.runIf(wantsStore(process.env.EONCE_STORES, "postgres"))(
    "3. PostgreSQL, the charge in the commit's transaction: one charge per order",
    async () => {
      const s = start("postgres");
      const database = `eonce_readme_${suffix}`;
      const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      await admin.query(`CREATE DATABASE ${database}`);
      const url = new URL(POSTGRES_URL);
      url.pathname = `/${database}`;
      try {
        const env = { ...process.env, DATABASE_URL: url.toString() };
        const report = expectClean(await runStart(project, s, { env, dynamodbEndpoint: endpoint }));
        const sent = (await readFile(join(project, s.name, flag(s, "--messages")[0] ?? ""), "utf8"))
          .trim()
          .split("\n")
          .map((line) => (JSON.parse(line) as { orderId: string }).orderId);
        expect(report.messages).toBe(sent.length);
        const db = new pg.Pool({ connectionString: url.toString(), max: 1 });
        // DROP … WITH (FORCE) below ends any backend of the database still closing: an error of ours, not the test's.
        db.on("error", () => {});
        const charges = await db.query<{ order_id: string; n: number }>(
          "SELECT order_id, count(*)::int AS n FROM charges GROUP BY order_id ORDER BY order_id",
        );
        await db.end();
        expect(charges.rows).toEqual([...new Set(sent)].sort().map((order_id) => ({ order_id, n: 1 })));
      } finally {
        await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
        await admin.end();
      }
    },
    300_000,
  );
});
