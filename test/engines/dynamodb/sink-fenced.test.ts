import { randomUUID } from "node:crypto";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { createStateTable, createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../../src/engines/dynamodb/store.js";
import { dynamoDBClient } from "../../../src/local/emulators/dynamodb-local.js";

/** The fenced sink's edges, defined and documented in src/engines/dynamodb/sink.ts. */
describe("DynamoDBFencedSink edges", () => {
  let client: DynamoDBClient;
  let table: string;
  let store: DynamoDBStore;
  const p = positionFromNumber;
  const ctx = (position: string | undefined, fence: number) => ({ position, fence });

  beforeAll(async () => {
    client = dynamoDBClient(inject("dynamodbEndpoint"));
    const suffix = randomUUID().slice(0, 8);
    table = `sink-${suffix}`;
    await createTableIfMissing(client, table, "pk");
    await createStateTable(client, { tableName: `state-${suffix}` });
    store = new DynamoDBStore({ client, tableName: `state-${suffix}` });
  });
  afterAll(() => client?.destroy());

  const backfill = async (pk: string) =>
    client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, value: { S: "backfill" } } }));

  it("a row written without a position (a backfill) is overwritten by default, kept with unfencedRows: keep", async () => {
    const overwrite = new DynamoDBFencedSink({ client, tableName: table });
    const keep = new DynamoDBFencedSink({ client, tableName: table, unfencedRows: "keep" });
    const a = `row-${randomUUID()}`;
    await backfill(a);
    expect(await overwrite.put(ctx(p(1), 5), { pk: a, value: "event" })).toBe("applied");
    expect(await overwrite.get(a)).toMatchObject({ value: "event", srcPos: p(1), srcFence: 5 });
    const b = `row-${randomUUID()}`;
    await backfill(b);
    expect(await keep.put(ctx(p(1), 5), { pk: b, value: "event" })).toBe("stale");
    expect(await keep.get(b)).toEqual({ pk: b, value: "backfill" });
    expect(
      () => new DynamoDBFencedSink({ client, tableName: table, unfencedRows: "maybe" as never }),
    ).toThrow(OptionsError);
  });

  it("events without a position: the later claim wins, and any positioned write wins over them", async () => {
    const sink = new DynamoDBFencedSink({ client, tableName: table });
    const guard = createGuard({ store });
    const row = `row-${randomUUID()}`;
    const subject = `bucket/${randomUUID()}`;
    for (const tag of ["tagging-1", "tagging-2"]) {
      const out = await guard.run({ subject, identity: tag }, async (c) => {
        sink.putAtCommit(c, { pk: row, value: tag });
      });
      expect(out).toMatchObject({ status: "processed", writes: [{ status: "applied" }] });
    }
    expect(await sink.get(row)).toMatchObject({ value: "tagging-2", srcPos: "" });
    expect(await sink.put(ctx(p(1), 1), { pk: row, value: "positioned" })).toBe("applied");
    expect(await sink.put(ctx(undefined, Number.MAX_SAFE_INTEGER), { pk: row, value: "late" })).toBe("stale");
  });

  it("a removal without a position is the empty position's write: it loses to positioned rows, fences order the rest", async () => {
    const sink = new DynamoDBFencedSink({ client, tableName: table });
    const row = `row-${randomUUID()}`;
    expect(await sink.put(ctx(p(5), 10), { pk: row, value: "v5" })).toBe("applied");
    expect(await sink.tombstone(ctx(undefined, 20), row, { reason: "lifecycle" })).toBe("stale");
    expect(await sink.get(row)).toMatchObject({ value: "v5", srcPos: p(5), srcFence: 10 });
    // A removal of a row that was never written: a tombstone at the empty position, with its fence.
    const fresh = `row-${randomUUID()}`;
    expect(await sink.tombstone(ctx(undefined, 3), fresh, { reason: "lifecycle" })).toBe("applied");
    expect(await sink.get(fresh)).toEqual({
      pk: fresh,
      deleted: true,
      reason: "lifecycle",
      srcPos: "",
      srcFence: 3,
    });
    // An older claim's positionless put cannot bring the row back; a later claim's, or any positioned write, can.
    expect(await sink.put(ctx(undefined, 2), { pk: fresh, value: "older claim" })).toBe("stale");
    expect(await sink.put(ctx(undefined, 4), { pk: fresh, value: "later claim" })).toBe("applied");
    expect(await sink.tombstone(ctx(undefined, 5), fresh)).toBe("applied");
    expect(await sink.put(ctx(p(1), 1), { pk: fresh, value: "created" })).toBe("applied");
    expect(await sink.get(fresh)).toEqual({ pk: fresh, value: "created", srcPos: p(1), srcFence: 1 });
  });

  it("a row with a fence but no position (a positionless tombstone of an older version) holds the empty position", async () => {
    for (const unfencedRows of ["overwrite", "keep"] as const) {
      const sink = new DynamoDBFencedSink({ client, tableName: table, unfencedRows });
      const old = async () => {
        const pk = `row-${randomUUID()}`;
        const item = { pk: { S: pk }, deleted: { BOOL: true }, srcFence: { N: "5" } };
        await client.send(new PutItemCommand({ TableName: table, Item: item }));
        return pk;
      };
      const a = await old();
      expect(await sink.put(ctx(undefined, 4), { pk: a, value: "older claim" })).toBe("stale");
      expect(await sink.put(ctx(undefined, 6), { pk: a, value: "later claim" })).toBe("applied");
      const b = await old();
      expect(await sink.put(ctx(p(0), 1), { pk: b, value: "positioned" })).toBe("applied");
    }
  });

  it("refuses a write without a real fence or with a position stores would order differently", async () => {
    const sink = new DynamoDBFencedSink({ client, tableName: table });
    await expect(sink.put(ctx(p(1), 0), { pk: "x", value: "v" })).rejects.toBeInstanceOf(OptionsError);
    expect(() => sink.putRequest(ctx("\u{1F600}", 1), { pk: "x" })).toThrow(/printable ASCII/);
  });
});
