import { randomUUID } from "node:crypto";
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  OptionsError,
  TransactionLimitError,
  UnsupportedAtomicWriteError,
} from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { UNORDERED_POSITION } from "../../../src/core/state.js";
import { stateKey } from "../../../src/core/state-key.js";
import type { AtomicWrite, StateStore } from "../../../src/core/store.js";
import {
  createOutboxTable,
  createStateTable,
  createTableIfMissing,
  DynamoDBOutbox,
  DynamoDBStore,
  InlineDynamoDBStore,
  isDynamoDBAtomicWrite,
  OUTBOX_ATTRIBUTES,
} from "../../../src/engines/dynamodb/index.js";
import { outboxPartitionKey, outboxSortKey } from "../../../src/engines/dynamodb/outbox-schema.js";
import { countRequests } from "../../../src/observe/request-counter.js";
import { outboxMessageId, outboxOrder } from "../../../src/outbox/message-id.js";
import type { OutboxEntry } from "../../../src/outbox/types.js";
import { localDynamoDB } from "../../kit/dynamodb.js";
import { loseResponses } from "../../kit/stores.js";

/*
 * What is particular to the DynamoDB outbox (the contract, test/engines/outbox.test.ts, runs on both engines): the
 * inline store pays for a transaction only when a commit publishes, recognises a lost response's retry, and folds
 * no write but its own row's and outbox entries; the transaction limit counts the entries.
 */

const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/orders" } as const;
const p = positionFromNumber;

function entry(subject: string, fence: number, index: number, name = `#${index + 1}`): OutboxEntry {
  return {
    messageId: outboxMessageId(subject, `id-${fence}`, name),
    subject,
    order: outboxOrder(fence, index),
    destination: QUEUE,
    body: `body ${fence}.${index}`,
    groupId: subject,
    createdAtMs: 1_000 + fence,
  };
}

let fences = 1;

/** Claims `key` (ordered, position 1) for a new fence; the fence. */
async function claim(s: StateStore, key: string, nowMs = Date.now(), leaseMs = 30_000): Promise<number> {
  const fence = fences++;
  const r = await s.claim({
    key,
    position: p(1),
    identity: "e",
    nowMs,
    leaseUntilMs: nowMs + leaseMs,
    expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
    supersede: false,
    fence,
    token: randomUUID(),
    leaseGraceMs: 0,
  });
  if (!r.claimed) throw new Error(`${key} not claimed`);
  return fence;
}

const commitOf = (key: string, fence: number, writes: AtomicWrite[]) => ({
  key,
  fence,
  identity: "e",
  expiresAtSeconds: Math.floor(Date.now() / 1000) + 3600,
  writes,
});

describe("DynamoDBOutbox", () => {
  const client = localDynamoDB();
  const suffix = randomUUID().slice(0, 8);
  const table = `inline-ob-${suffix}`;
  const outboxTable = `outbox-ob-${suffix}`;
  const stateTable = `state-ob-${suffix}`;
  const requests = countRequests(client, "outboxTestCounter");
  const lost = loseResponses(client);
  const inline = new InlineDynamoDBStore({ client, tableName: table });
  const inlineOutbox = new DynamoDBOutbox({ client, tableName: outboxTable, engine: "dynamodb-inline" });
  const outbox = new DynamoDBOutbox({ client, tableName: outboxTable });
  const store = new DynamoDBStore({ client, tableName: stateTable });
  const stored = async (e: OutboxEntry) =>
    (
      await client.send(
        new GetItemCommand({
          TableName: outboxTable,
          Key: {
            [OUTBOX_ATTRIBUTES.subject]: { S: outboxPartitionKey(e.subject) },
            [OUTBOX_ATTRIBUTES.order]: { S: outboxSortKey(e) },
          },
          ConsistentRead: true,
        }),
      )
    ).Item;

  beforeAll(async () => {
    await Promise.all([
      createTableIfMissing(client, table, "pk"),
      createOutboxTable(client, { tableName: outboxTable }),
      createStateTable(client, { tableName: stateTable }),
    ]);
  });
  afterAll(() => client.destroy());

  it("checks its options", () => {
    expect(
      () => new DynamoDBOutbox({ client, tableName: outboxTable, engine: "sqlite" as "dynamodb" }),
    ).toThrow(OptionsError);
    expect(() => new DynamoDBOutbox({ client, tableName: "" })).toThrow(OptionsError);
    expect(() => new DynamoDBOutbox({ client, tableName: outboxTable, pendingBuckets: 0 })).toThrow(
      OptionsError,
    );
  });

  it("inline: a commit that publishes is one transaction; one that does not stays one UpdateItem", async () => {
    const guard = createGuard({ store: inline, outbox: inlineOutbox });
    const subject = `plain-${randomUUID()}`;
    requests.reset();
    const quiet = await guard.apply({ subject, identity: "a", position: p(1) }, (ctx) =>
      ctx.atCommit(inline.row(ctx, { total: 1 })),
    );
    expect(quiet.status).toBe("processed");
    expect(requests.counts).toEqual({ UpdateItem: 1 });

    requests.reset();
    let id = "";
    const loud = await guard.apply({ subject, identity: "b", position: p(2) }, (ctx) => {
      ctx.atCommit(inline.row(ctx, { total: 2 }));
      id = ctx.publish(QUEUE, { total: 2 });
    });
    expect(loud.status).toBe("processed");
    expect(requests.counts).toEqual({ TransactWriteItems: 1 });
    const pending = (await inlineOutbox.pending()).filter((e) => e.subject === subject);
    expect(pending.map((e) => e.messageId)).toEqual([id]);
    const row = await client.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: subject } }, ConsistentRead: true }),
    );
    expect(row.Item?.total?.N).toBe("2");

    // A duplicate publishes nothing: apply ran its function before the claim, so its one request is the refused
    // transaction.
    requests.reset();
    const again = await guard.apply({ subject, identity: "b", position: p(2) }, (ctx) => {
      ctx.publish(QUEUE, "never");
    });
    expect(again.status).toBe("duplicate");
    expect(requests.counts).toEqual({ TransactWriteItems: 1 });
    expect((await inlineOutbox.pending()).filter((e) => e.subject === subject)).toHaveLength(1);
  });

  it("inline: a commit with entries whose response was lost is recognised on its retry (the state row tells)", async () => {
    const subject = `lost-${randomUUID()}`;
    const key = stateKey(subject, "e", true);
    const fence = await claim(inline, key);
    const e = entry(subject, fence, 0);
    const commit = () => inline.commit(commitOf(key, fence, [inlineOutbox.entryWrite(e)]));
    // The transaction lands, its answer is lost: the SDK retries it (and so would the guard).
    lost.lose(1);
    const first = await commit();
    expect(first.committed).toBe(true);
    // And a retry of the whole commit, as the guard makes after a StoreError: the state row says it landed.
    const second = await commit();
    expect(second).toMatchObject({ committed: true, writes: [{ description: `outbox ${e.messageId}` }] });
    expect(await stored(e)).toBeDefined();
    expect((await inlineOutbox.pending()).filter((x) => x.subject === subject)).toHaveLength(1);
  });

  it("inline: a commit whose claim was lost lands no entry", async () => {
    const subject = `stale-${randomUUID()}`;
    const key = stateKey(subject, "e", true);
    const now = Date.now();
    const old = await claim(inline, key, now - 60_000, 1);
    await claim(inline, key, now);
    const e = entry(subject, old, 0);
    const r = await inline.commit(commitOf(key, old, [inlineOutbox.entryWrite(e)]));
    expect(r.committed).toBe(false);
    expect(await stored(e)).toBeUndefined();
  });

  it("inline: a publishing commit whose row write is refused (a newer direct write) lands with its entries", async () => {
    const subject = `newer-${randomUUID()}`;
    const key = stateKey(subject, "", true);
    const start = Date.now();
    const req = (position: string, identity: string, fence: number, nowMs: number) => ({
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
    expect(await inline.claim(req(p(2), "dog", 10, start))).toMatchObject({ claimed: true });
    expect(await inline.putRow({ stateKey: key, fence: 10 }, { thumb: "dog" })).toBe("applied");
    expect(await inline.claim(req(p(1), "cat", 20, start + 1000))).toMatchObject({ claimed: true });
    const cat = entry(subject, 20, 0);
    const commit = await inline.commit({
      ...commitOf(key, 20, [inline.row({ stateKey: key }, { thumb: "cat" }), inlineOutbox.entryWrite(cat)]),
      identity: "cat",
    });
    expect(commit).toMatchObject({ committed: true, writes: [{ status: "stale" }, { status: "applied" }] });
    const between = entry(subject, 30, 0);
    const applied = await inline.claimAndCommit({
      ...req(`${p(1)}5`, "between", 30, start + 2000),
      writes: [inline.row({ stateKey: key }, { thumb: "between" }), inlineOutbox.entryWrite(between)],
    });
    expect(applied).toMatchObject({ claimed: true, writes: [{ status: "stale" }, { status: "applied" }] });
    expect(await stored(cat)).toBeDefined();
    expect(await stored(between)).toBeDefined();
  });

  it("inline: folds its own outbox's entries only, and no other row's write", () => {
    const e = entry("s", 1, 0);
    expect(inline.canFold(inlineOutbox.entryWrite(e))).toBe(true);
    // The dynamodb engine's outbox writes are DynamoDBStore's.
    expect(inline.canFold(outbox.entryWrite(e))).toBe(false);
    expect(store.canFold(outbox.entryWrite(e))).toBe(true);
    expect(isDynamoDBAtomicWrite(outbox.entryWrite(e))).toBe(true);
    // A write that looks like an entry's put but was not made by an outbox is another row's write: refused.
    const forged = { ...inlineOutbox.entryWrite(e) } as AtomicWrite;
    expect(inline.canFold(forged)).toBe(false);
    const key = stateKey("s", "e", true);
    return expect(inline.commit(commitOf(key, 1, [forged]))).rejects.toBeInstanceOf(
      UnsupportedAtomicWriteError,
    );
  });

  it("counts the entries against the 100 actions of a transaction, the state update included", async () => {
    const subject = `many-${randomUUID()}`;
    const key = stateKey(subject, "e", true);
    for (const [s, o] of [
      [store, outbox],
      [inline, inlineOutbox],
    ] as const) {
      const fence = await claim(s, key);
      const writes = (n: number) =>
        Array.from({ length: n }, (_, i) => o.entryWrite(entry(subject, fence, i)));
      const commit = (n: number) => s.commit(commitOf(key, fence, writes(n)));
      await expect(commit(100)).rejects.toBeInstanceOf(TransactionLimitError);
      const r = await commit(99);
      expect(r.committed).toBe(true);
      expect(r.committed && r.writes.filter((w) => w.status === "applied")).toHaveLength(99);
    }
  });

  it("keeps apart two entries of one subject with one order (unordered events' states: their fences may meet)", async () => {
    const subject = `unordered-${randomUUID()}`;
    const fence = fences++;
    const entries = ["u1", "u2"].map((identity) => ({
      ...entry(subject, fence, 0),
      messageId: outboxMessageId(subject, identity, "#1"),
    }));
    for (const [i, identity] of ["u1", "u2"].entries()) {
      const key = stateKey(subject, identity, false);
      const nowMs = Date.now();
      const r = await store.claim({
        key,
        position: UNORDERED_POSITION,
        identity,
        nowMs,
        leaseUntilMs: nowMs + 30_000,
        expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
        supersede: false,
        fence,
        token: randomUUID(),
        leaseGraceMs: 0,
      });
      expect(r.claimed).toBe(true);
      const c = await store.commit({ ...commitOf(key, fence, [outbox.entryWrite(entries[i]!)]), identity });
      expect(c).toMatchObject({ committed: true, writes: [{ status: "applied" }] });
    }
    const pending = (await outbox.pending()).filter((e) => e.subject === subject);
    expect(pending.map((e) => e.messageId).sort()).toEqual(entries.map((e) => e.messageId).sort());
  });

  it("marks an entry sent only for the relay that holds it, and keeps a sent entry until its TTL", async () => {
    const subject = `mark-${randomUUID()}`;
    const e = entry(subject, 7, 0);
    const key = stateKey(subject, "e", true);
    const fence = await claim(store, key);
    expect((await store.commit(commitOf(key, fence, [outbox.entryWrite(e)]))).committed).toBe(true);
    const nowMs = Date.now();
    const [held] = (
      await outbox.claim({ limit: 1000, owner: "r1", nowMs, leaseUntilMs: nowMs + 10_000 })
    ).filter((c) => c.subject === subject);
    if (!held) throw new Error("not claimed by the relay");
    expect(held).toEqual({ ...e, owner: "r1", leaseUntilMs: nowMs + 10_000 });
    expect(await outbox.markSent({ ...held, owner: "r2" }, nowMs)).toBe(false);
    expect(await outbox.markSent(held, nowMs)).toBe(true);
    const item = await stored(e);
    expect(item?.[OUTBOX_ATTRIBUTES.sentAtMs]?.N).toBe(String(nowMs));
    expect(item?.[OUTBOX_ATTRIBUTES.unsent]).toBeUndefined();
    expect(item?.[OUTBOX_ATTRIBUTES.pendingBucket]).toBeUndefined();
    expect(Number(item?.[OUTBOX_ATTRIBUTES.expiresAt]?.N)).toBe(Math.floor(nowMs / 1000) + 86_400);
    // The stream handler's mark finds it marked.
    expect(await outbox.markSentUnleased(e, nowMs)).toBe(false);
  });

  it("claims the oldest subjects' heads first, at most limit, over every bucket of the pending index", async () => {
    const subjects = ["x", "y", "z"].map((s) => `${s}-oldest-${randomUUID()}`);
    for (const [i, subject] of subjects.entries()) {
      const key = stateKey(subject, "e", true);
      const fence = await claim(store, key);
      // Older than anything else in the table: made at 1, 2, 3 ms after the epoch.
      const e = { ...entry(subject, fence, 0), createdAtMs: 1 + i };
      const later = { ...entry(subject, fence, 1), createdAtMs: 1 + i };
      const r = await store.commit(commitOf(key, fence, [outbox.entryWrite(e), outbox.entryWrite(later)]));
      expect(r.committed).toBe(true);
    }
    const nowMs = Date.now();
    const got = await outbox.claim({ limit: 2, owner: "r", nowMs, leaseUntilMs: nowMs + 5_000 });
    // Each subject's head (its first message), the two oldest subjects.
    expect(got.map((c) => c.subject)).toEqual(subjects.slice(0, 2));
    expect(got.map((c) => c.order.endsWith(".0000"))).toEqual([true, true]);
    const next = await outbox.claim({ limit: 1, owner: "r", nowMs, leaseUntilMs: nowMs + 5_000 });
    expect(next.map((c) => c.subject)).toEqual([subjects[2]]);
  });
});
