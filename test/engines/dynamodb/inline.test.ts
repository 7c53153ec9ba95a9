import { randomUUID } from "node:crypto";
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { meterCapacity } from "../../../bench/capacity.js";
import { OptionsError, UnsupportedAtomicWriteError } from "../../../src/core/errors.js";
import { type ApplyContext, createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import { INLINE_STATE_ATTRIBUTES, InlineDynamoDBStore } from "../../../src/engines/dynamodb/index.js";
import { createTableIfMissing } from "../../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../../src/engines/dynamodb/sink.js";
import { MemoryStore } from "../../../src/engines/memory/store.js";
import { dynamoDBClient } from "../../../src/local/emulators/dynamodb-local.js";
import { countRequests } from "../../../src/observe/request-counter.js";
import { guardEvent } from "../../kit/index.js";

/*
 * What is particular to inline state (the contract and guard suites run on it through test/kit/stores.ts):
 * one plain write per event, the user's attributes left alone, its own row only, options checked eagerly.
 */
const p = positionFromNumber;
const ev = guardEvent;

describe("InlineDynamoDBStore", () => {
  const client = dynamoDBClient(inject("dynamodbEndpoint"));
  const tableName = `inline-only-${randomUUID().slice(0, 8)}`;
  const requests = countRequests(client, "inlineTestCounter");
  const capacity = meterCapacity(client);
  const store = new InlineDynamoDBStore({ client, tableName });
  const row = async (key: string) =>
    (
      await client.send(
        new GetItemCommand({ TableName: tableName, Key: { pk: { S: key } }, ConsistentRead: true }),
      )
    ).Item;

  beforeAll(async () => {
    await createTableIfMissing(client, tableName, "pk");
  });
  afterAll(() => client.destroy());

  it("apply: a new event is one UpdateItem of 1 WCU; duplicate and stale one refused write each", async () => {
    const g = createGuard({ store });
    const s = `bucket/${randomUUID()}`;
    const compute = (n: number) => (ctx: ApplyContext) => {
      ctx.atCommit(store.row(ctx, { thumb: `t${n}` }));
      return n;
    };
    requests.reset();
    capacity.reset();
    expect(await g.apply(ev(s, 2), compute(2))).toMatchObject({
      status: "processed",
      writes: [{ status: "applied" }],
    });
    expect(requests.counts).toEqual({ UpdateItem: 1 });
    expect({ wcu: capacity.wcu, rcu: capacity.rcu, estimated: capacity.estimatedWcu }).toEqual({
      wcu: 1,
      rcu: 0,
      estimated: 0,
    });
    for (const [n, status] of [
      [2, "duplicate"],
      [1, "stale"],
    ] as const) {
      requests.reset();
      expect((await g.apply(ev(s, n), compute(n))).status).toBe(status);
      expect(requests.counts).toEqual({ UpdateItem: 1 });
    }
    expect(await row(s)).toMatchObject({ thumb: { S: "t2" }, eo_cpos: { S: p(2) } });
  });

  it("run: claim, then commit with the row: two plain UpdateItems, no transaction", async () => {
    const g = createGuard({ store });
    const s = `bucket/${randomUUID()}`;
    requests.reset();
    const out = await g.run(ev(s, 3), async (ctx) => {
      ctx.atCommit(store.row(ctx, { thumb: "t3" }));
      return "ok";
    });
    expect(out.status).toBe("processed");
    expect(requests.counts).toEqual({ UpdateItem: 2 });
  });

  it("leaves the user's attributes alone: a row written by something else is claimed and keeps them", async () => {
    const s = `bucket/${randomUUID()}`;
    await client.send(
      new PutItemCommand({
        TableName: tableName,
        Item: { pk: { S: s }, owner: { S: "backfill" }, thumb: { S: "old" } },
      }),
    );
    const g = createGuard({ store });
    // A run that fails: claim and release touch only eo_* attributes.
    const failed = await g.run(ev(s, 1), async () => {
      throw new Error("boom");
    });
    expect(failed).toMatchObject({ status: "failed", released: true });
    const afterRelease = await row(s);
    expect(afterRelease).toMatchObject({
      owner: { S: "backfill" },
      thumb: { S: "old" },
      eo_st: { S: "released" },
    });
    await g.apply(ev(s, 1), (ctx) => ctx.atCommit(store.row(ctx, { thumb: "new", owner: undefined })));
    const item = await row(s);
    expect(item?.thumb).toEqual({ S: "new" });
    expect(item?.owner).toBeUndefined(); // `undefined` removes the attribute
    const names = Object.keys(item ?? {});
    expect(names.filter((n) => n.startsWith("eo_")).every((n) => INLINE_STATE_ATTRIBUTES.includes(n))).toBe(
      true,
    );
  });

  it("a newer event's direct row write that never committed is not replaced by an older event that took over", async () => {
    const s = `bucket/${randomUUID()}`;
    const key = stateKey(s, "", true);
    const start = Date.now();
    const claim = (position: string, identity: string, fence: number, nowMs: number) => ({
      key,
      position,
      identity,
      nowMs,
      leaseUntilMs: nowMs + 100,
      expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
      supersede: false,
      fence,
      token: randomUUID(),
      leaseGraceMs: 0,
    });
    expect(await store.claim(claim(p(2), "dog", 10, start))).toMatchObject({ claimed: true });
    expect(await store.putRow({ stateKey: key, fence: 10 }, { thumb: "dog" })).toBe("applied");
    // The dog's commit never comes; its lease ends and the older cat takes the claim over.
    expect(await store.claim(claim(p(1), "cat", 20, start + 1000))).toMatchObject({ claimed: true });
    expect(await store.putRow({ stateKey: key, fence: 20 }, { thumb: "cat" })).toBe("stale");
    const commit = await store.commit({
      key,
      fence: 20,
      identity: "cat",
      expiresAtSeconds: Math.ceil(start / 1000) + 3600,
      writes: [store.row({ stateKey: key }, { thumb: "cat" })],
    });
    expect(commit).toMatchObject({ committed: true, writes: [{ status: "stale" }] });
    // apply, between the two: committed, its row write stale.
    const between = `${p(1)}5`;
    const applied = await store.claimAndCommit({
      ...claim(between, "between", 30, start + 2000),
      writes: [store.row({ stateKey: key }, { thumb: "between" })],
    });
    expect(applied).toMatchObject({ claimed: true, writes: [{ status: "stale" }] });
    expect(await store.read(key)).toMatchObject({ status: "done", committedPosition: between });
    expect((await row(s))?.thumb).toEqual({ S: "dog" });
    // The dog's redelivery commits its own work over it.
    expect(await store.claim(claim(p(2), "dog", 40, start + 3000))).toMatchObject({ claimed: true });
    const dog = await store.commit({
      key,
      fence: 40,
      identity: "dog",
      expiresAtSeconds: Math.ceil(start / 1000) + 3600,
      writes: [store.row({ stateKey: key }, { thumb: "dog 2" })],
    });
    expect(dog).toMatchObject({ committed: true, writes: [{ status: "applied" }] });
    expect((await row(s))?.thumb).toEqual({ S: "dog 2" });
  });

  it("reads and claims rows as stored by earlier versions (the same eo_* attributes, written through placeholders)", async () => {
    const now = Date.now();
    const seed = async (pk: string, state: Record<string, string | number>) => {
      const item: Record<string, { S: string } | { N: string }> = { pk: { S: pk }, thumb: { S: "seeded" } };
      for (const [name, v] of Object.entries(state))
        item[`eo_${name}`] = typeof v === "number" ? { N: String(v) } : { S: v };
      await client.send(new PutItemCommand({ TableName: tableName, Item: item }));
    };
    const done = `bucket/${randomUUID()}`;
    // A committed row with every optional attribute, as apply (result, fingerprint) and a direct write left it.
    await seed(done, {
      st: "done",
      pos: p(2),
      eid: "e2",
      fence: 1000,
      tok: "t",
      cpos: p(2),
      ceid: "e2",
      res: "7",
      cfp: "fp",
      rskip: 5,
      wpos: p(2),
      wfence: 1000,
      exp: Math.ceil(now / 1000) + 3600,
    });
    expect(await store.read(stateKey(done, "", true))).toMatchObject({
      status: "done",
      position: p(2),
      committedPosition: p(2),
      committedIdentity: "e2",
      fence: 1000,
      result: "7",
      committedFingerprint: "fp",
      resultOmittedBytes: 5,
    });
    const g = createGuard({ store });
    const write = (n: number) => (ctx: ApplyContext) => {
      ctx.atCommit(store.row(ctx, { thumb: `t${n}` }));
      return n;
    };
    expect(await g.apply({ ...ev(done, 2), identity: "e2" }, write(2))).toMatchObject({
      status: "duplicate",
      result: 7,
    });
    expect((await g.apply(ev(done, 1), write(1))).status).toBe("stale");
    expect((await g.apply(ev(done, 3), write(3))).status).toBe("processed");
    const applied = await row(done);
    expect(applied).toMatchObject({ thumb: { S: "t3" }, eo_st: { S: "done" }, eo_cpos: { S: p(3) } });
    expect(applied?.eo_cfp ?? applied?.eo_rskip).toBeUndefined();

    // A running row whose lease ended, after a direct write of its own, retried twice: taken over and committed.
    const running = `bucket/${randomUUID()}`;
    await seed(running, {
      st: "running",
      pos: p(5),
      eid: "e5",
      fence: 2000,
      tok: "t",
      lease: now - 60_000,
      att: 2,
      cpos: p(4),
      ceid: "e4",
      wpos: p(5),
      wfence: 2000,
      exp: Math.ceil(now / 1000) + 3600,
    });
    const taken = await g.run({ ...ev(running, 5), identity: "e5" }, async (ctx) => {
      ctx.atCommit(store.row(ctx, { thumb: "t5" }));
      return "ok";
    });
    expect(taken).toMatchObject({ status: "processed", attempt: 3, writes: [{ status: "applied" }] });
    const committed = await row(running);
    expect(committed).toMatchObject({ thumb: { S: "t5" }, eo_st: { S: "done" }, eo_cpos: { S: p(5) } });
    expect(committed?.eo_lease ?? committed?.eo_att).toBeUndefined();

    // A live claim: a newer event is busy, an older one stale; the holder's direct write stays.
    const live = `bucket/${randomUUID()}`;
    await seed(live, {
      st: "running",
      pos: p(8),
      eid: "e8",
      fence: 3000,
      tok: "t",
      lease: now + 60_000,
      cpos: p(6),
      ceid: "e6",
      wpos: p(8),
      wfence: 3000,
      exp: Math.ceil(now / 1000) + 3600,
    });
    const retry = createGuard({ store, busy: "retry" });
    expect((await retry.apply(ev(live, 9), write(9))).status).toBe("busy");
    expect((await retry.apply(ev(live, 7), write(7))).status).toBe("stale");
    expect((await row(live))?.thumb).toEqual({ S: "seeded" });
  });

  it("folds only its own row writes, for the committing subject's row", async () => {
    const other = new InlineDynamoDBStore({ client, tableName });
    const key = stateKey(`bucket/${randomUUID()}`, "", true);
    expect(store.canFold(store.row({ stateKey: key }, { a: 1 }))).toBe(true);
    expect(store.canFold(other.row({ stateKey: key }, { a: 1 }))).toBe(false);
    const sink = new DynamoDBFencedSink({ client, tableName });
    expect(store.canFold(sink.atomicPut({ position: p(1), fence: 1 }, { pk: "x" }))).toBe(false);
    const g = createGuard({ store });
    const out = await g.apply(ev(`bucket/${randomUUID()}`, 1), (ctx) => {
      ctx.atCommit(sink.atomicPut(ctx, { pk: "x" }));
    });
    expect(out.status === "failed" && out.error).toBeInstanceOf(UnsupportedAtomicWriteError);
    // Another subject's row: refused before anything is sent.
    requests.reset();
    const s = `bucket/${randomUUID()}`;
    await expect(
      g.apply(ev(s, 1), (ctx) => {
        ctx.atCommit(store.row({ stateKey: key }, { a: 1 }));
      }),
    ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    expect(requests.total()).toBe(0);
    expect(await row(store.rowKeyOf(key))).toBeUndefined();
  });

  it("maps state keys to rows: the subject for ordered events, the state key otherwise, or rowKey", () => {
    expect(store.rowKeyOf("o#bucket/a.jpg")).toBe("bucket/a.jpg");
    expect(store.rowKeyOf("u#3#abcid-1")).toBe("u#3#abcid-1");
    const custom = new InlineDynamoDBStore({ client, tableName, rowKey: (k) => `row:${k}` });
    expect(custom.rowKeyOf("o#x")).toBe("row:o#x");
    expect(() => new InlineDynamoDBStore({ client, tableName, rowKey: () => "" }).rowKeyOf("o#x")).toThrow(
      OptionsError,
    );
  });

  it("checks options and row attributes eagerly", async () => {
    expect(() => new InlineDynamoDBStore({ client, tableName, tablename: "x" } as never)).toThrow(
      OptionsError,
    );
    expect(() => new InlineDynamoDBStore({ client, tableName: "" })).toThrow(OptionsError);
    expect(() => new InlineDynamoDBStore({ tableName } as never)).toThrow(OptionsError);
    expect(() => new InlineDynamoDBStore({ client, tableName, keyAttribute: "eo_pk" })).toThrow(OptionsError);
    expect(() => new InlineDynamoDBStore({ client, tableName, rowKey: "pk" as never })).toThrow(OptionsError);
    expect(() => new InlineDynamoDBStore(undefined as never)).toThrow(OptionsError);
    const ctx = { stateKey: "o#s" };
    expect(() => store.row(ctx, { eo_fence: 1 })).toThrow(OptionsError);
    expect(() => store.row(ctx, { pk: "other" })).toThrow(OptionsError);
    expect(() => store.row({} as never, { a: 1 })).toThrow(OptionsError);
    expect(() => store.row(ctx, null as never)).toThrow(OptionsError);
    await expect(store.putRow({ stateKey: "o#s", fence: 1 }, {})).rejects.toBeInstanceOf(OptionsError);
    // The memory store cannot fold an inline row write either.
    expect(new MemoryStore().canFold(store.row(ctx, { a: 1 }))).toBe(false);
  });
});
