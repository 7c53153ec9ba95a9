import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { positionFromNumber } from "../../src/core/position.js";
import { createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { PostgresFencedSink } from "../../src/engines/postgres/sink.js";
import { SqliteFencedSink, SqliteStore } from "../../src/engines/sqlite/index.js";
import { localDynamoDB } from "../kit/dynamodb.js";
import { testDatabase } from "../kit/postgres.js";
import { selectStoreNames } from "../kit/store-names.js";

/**
 * The fenced sinks' one rule (docs/architecture.md, "Sinks"), on every engine: a write carries (position, fence), a
 * missing position counting as the empty one, which sorts before every real position; it lands only over a row
 * holding an older stamp (lower position, or the same position and a lower fence). So the row ends as the write with
 * the greatest stamp among those that arrived, whatever the arrival order, puts and tombstones, with or without a
 * position, alike. PostgreSQL and SQLite have no tombstone: there it is a put of a row marked deleted.
 */

interface Write {
  kind: "put" | "tombstone";
  /** Undefined: an event without a position. */
  position: number | undefined;
  fence: number;
}

/** A sink row as the test reads it back: the value (undefined for a tombstone) and the stamp it carries. */
interface Row {
  value: string | undefined;
  deleted: boolean;
  position: unknown;
  fence: number;
}

interface RuleSink {
  write(key: string, w: Write, value: string): Promise<"applied" | "stale">;
  read(key: string): Promise<Row | undefined>;
  close(): Promise<void>;
}

const p = positionFromNumber;
const positionOf = (w: Write) => (w.position === undefined ? "" : p(w.position));
const ctxOf = (w: Write) => ({
  position: w.position === undefined ? undefined : p(w.position),
  fence: w.fence,
});

async function dynamoSink(unfencedRows: "overwrite" | "keep"): Promise<RuleSink> {
  const client = localDynamoDB();
  const tableName = `rule-${randomUUID().slice(0, 8)}`;
  await createTableIfMissing(client, tableName, "pk");
  const sink = new DynamoDBFencedSink({ client, tableName, unfencedRows });
  return {
    write: (pk, w, value) =>
      w.kind === "put" ? sink.put(ctxOf(w), { pk, value }) : sink.tombstone(ctxOf(w), pk),
    read: async (pk) => {
      const row = await sink.get(pk);
      if (!row) return undefined;
      const value = row.value === undefined ? undefined : String(row.value);
      return { value, deleted: row.deleted === true, position: row.srcPos, fence: Number(row.srcFence) };
    },
    close: async () => client.destroy(),
  };
}

async function postgresSink(): Promise<RuleSink> {
  const db = await testDatabase("rule");
  await db.pool.query(
    `CREATE TABLE "${db.schema}".sink (pk text PRIMARY KEY, value text, deleted boolean NOT NULL, src_pos text, src_fence bigint)`,
  );
  const sink = new PostgresFencedSink({ pool: db.pool, schema: db.schema, table: "sink" });
  return {
    write: (pk, w, value) =>
      sink.put(
        ctxOf(w),
        w.kind === "put" ? { pk, value, deleted: false } : { pk, value: null, deleted: true },
      ),
    read: async (pk) => {
      const row = await sink.get(pk);
      if (!row) return undefined;
      const value = row.value === null ? undefined : String(row.value);
      return { value, deleted: row.deleted === true, position: row.src_pos, fence: Number(row.src_fence) };
    },
    close: () => db.close(),
  };
}

async function sqliteSink(): Promise<RuleSink> {
  const dir = mkdtempSync(join(tmpdir(), "eonce-rule-"));
  const store = new SqliteStore({ filename: join(dir, "state.db"), synchronous: "normal" });
  const sink = new SqliteFencedSink({ store });
  return {
    write: (key, w, value) =>
      sink.put(ctxOf(w), { key, value: w.kind === "put" ? { value } : { deleted: true } }),
    read: async (key) => {
      const row = await sink.get(key);
      if (!row) return undefined;
      const stored = row.value as { value?: string; deleted?: boolean };
      return {
        value: stored.value,
        deleted: stored.deleted === true,
        position: row.srcPos,
        fence: row.srcFence,
      };
    },
    close: async () => {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Engines by store name (EONCE_STORES leaves some out); DynamoDB with both `unfencedRows` settings. */
const ENGINES: { name: string; store: string; make(): Promise<RuleSink> }[] = [
  { name: "dynamodb", store: "dynamodb", make: () => dynamoSink("overwrite") },
  { name: "dynamodb (unfencedRows: keep)", store: "dynamodb", make: () => dynamoSink("keep") },
  { name: "postgres", store: "postgres", make: postgresSink },
  { name: "sqlite", store: "sqlite", make: sqliteSink },
];
const WANTED = selectStoreNames(process.env.EONCE_STORES, undefined) as string[];

/** Whether a write stamped `a` may replace a row stamped `b`: the rule. */
function newer(a: { position: string; fence: number }, b: { position: string; fence: number }): boolean {
  return a.position > b.position || (a.position === b.position && a.fence > b.fence);
}

const write = fc.record({
  kind: fc.constantFrom("put" as const, "tombstone" as const),
  position: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  fence: fc.integer({ min: 1, max: 4 }),
});

/** The sequences that broke the rule on DynamoDB, always tried first. */
const EXAMPLES: [Write[]][] = [
  // A positionless tombstone of a missing row, then an older claim's positionless put: stale.
  [
    [
      { kind: "tombstone", position: undefined, fence: 3 },
      { kind: "put", position: undefined, fence: 2 },
    ],
  ],
  // ... then a positioned put: applied, with either unfencedRows.
  [
    [
      { kind: "tombstone", position: undefined, fence: 3 },
      { kind: "put", position: 1, fence: 1 },
    ],
  ],
  // A positionless tombstone cannot remove a positioned row: any positioned write wins over it.
  [
    [
      { kind: "put", position: 2, fence: 1 },
      { kind: "tombstone", position: undefined, fence: 4 },
    ],
  ],
];

describe.each(ENGINES.filter((e) => WANTED.includes(e.store)))("fenced sink rule: $name", (engine) => {
  let sink: RuleSink;
  beforeAll(async () => {
    sink = await engine.make();
  });
  afterAll(async () => sink?.close());

  it("property: the row is the greatest (position or '', fence) applied; each outcome is the rule's", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 6 }), async (writes) => {
        const key = `rule-${randomUUID()}`;
        const expected: ("applied" | "stale")[] = [];
        let held: { write: Write; index: number } | undefined;
        for (const [index, w] of writes.entries()) {
          const mine = { position: positionOf(w), fence: w.fence };
          const lands = !held || newer(mine, { position: positionOf(held.write), fence: held.write.fence });
          expected.push(lands ? "applied" : "stale");
          if (lands) held = { write: w, index };
        }
        const reported = [];
        for (const [index, w] of writes.entries()) reported.push(await sink.write(key, w, `v${index}`));
        expect(reported).toEqual(expected);
        const last = held as { write: Write; index: number };
        const tombstone = last.write.kind === "tombstone";
        expect(await sink.read(key)).toEqual({
          value: tombstone ? undefined : `v${last.index}`,
          deleted: tombstone,
          position: positionOf(last.write),
          fence: last.write.fence,
        });
      }),
      { numRuns: 30, examples: EXAMPLES },
    );
  });
});
