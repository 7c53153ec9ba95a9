import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError, UnsupportedAtomicWriteError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stampRedisKey, valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { ValkeyFencedSink, valkeyWrite } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { claimOf, deleteKeys, testClient, testPrefix } from "./harness.js";

/** Redis Cluster's slot of a key (CRC16 of its hash tag, mod 16384): ioredis's own dependency. */
const keySlot = createRequire(import.meta.url)("cluster-key-slot") as (key: string) => number;
const p = positionFromNumber;

describe("valkey fenced sink", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let sink: ValkeyFencedSink;
  const subject = () => `o#b/${randomUUID()}`;
  /** A key of this run in the state key's slot. */
  const inSlot = (name: string, stateKey: string) => `${prefix}${name}:${valkeyHashTag(stateKey)}`;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
    sink = new ValkeyFencedSink({ store });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("folds a string, a hash field, a counter and a sorted-set member into the commit; a zombie's commit writes none", async () => {
    const k = subject();
    const now = Date.now();
    const zombie = claimOf(k, 4, { nowMs: now, leaseUntilMs: now + 10 });
    await store.claim(zombie);
    const taker = claimOf(k, 4, { nowMs: now + 20 });
    await store.claim(taker);
    const writes = (fence: number) => {
      const ctx = { position: p(4), fence };
      return [
        sink.set(ctx, inSlot("s", k), "latest"),
        sink.hset(ctx, inSlot("h", k), "f", "hv"),
        sink.increment(ctx, inSlot("n", k), 5),
        sink.zadd(ctx, inSlot("z", k), 42, "m"),
      ];
    };
    const commitOf = (fence: number) => ({ key: k, fence, identity: taker.identity, expiresAtSeconds: 9e9 });
    expect(await store.commit({ ...commitOf(zombie.fence), writes: writes(zombie.fence) })).toMatchObject({
      committed: false,
    });
    expect(await client.exists(inSlot("s", k), inSlot("h", k), inSlot("n", k), inSlot("z", k))).toBe(0);
    const ok = await store.commit({ ...commitOf(taker.fence), writes: writes(taker.fence) });
    expect(ok).toEqual({
      committed: true,
      writes: Array(4).fill({ description: expect.any(String), status: "applied" }),
    });
    expect(await client.get(inSlot("s", k))).toBe("latest");
    expect(await client.hget(inSlot("h", k), "f")).toBe("hv");
    expect(await client.get(inSlot("n", k))).toBe("5");
    expect(await client.zscore(inSlot("z", k), "m")).toBe("42");
    expect(await sink.stamp(inSlot("h", k), "f")).toEqual({ position: p(4), fence: taker.fence });
  });

  it("lands only over older work: position, then fence; the empty position is older than any", async () => {
    const k = subject();
    const target = inSlot("s", k);
    const put = (pos: string | undefined, fence: number, v: string) =>
      sink.put(sink.set({ position: pos, fence }, target, v));
    expect(await put(undefined, 10, "none-10")).toBe("applied");
    expect(await put(undefined, 11, "none-11")).toBe("applied");
    expect(await put(undefined, 9, "none-9")).toBe("stale");
    expect(await put(p(3), 5, "p3-5")).toBe("applied");
    expect(await put(undefined, 99, "none-99")).toBe("stale");
    expect(await put(p(2), 50, "p2-50")).toBe("stale");
    // The same claim's stamp (position and fence): its own write, as a retry after a lost reply finds it.
    expect(await put(p(3), 5, "p3-5 again")).toBe("applied");
    expect(await client.get(target)).toBe("p3-5 again");
    expect(await put(p(3), 6, "p3-6")).toBe("applied");
    expect(await client.get(target)).toBe("p3-6");
    expect(await sink.stamp(target)).toEqual({ position: p(3), fence: 6 });
    // Fields and members keep stamps of their own.
    const h = inSlot("h", k);
    expect(await sink.put(sink.hset({ position: p(5), fence: 1 }, h, "a", "a5"))).toBe("applied");
    expect(await sink.put(sink.hset({ position: p(4), fence: 2 }, h, "b", "b4"))).toBe("applied");
    expect(await sink.put(sink.hset({ position: p(4), fence: 2 }, h, "a", "a4"))).toBe("stale");
    expect(await client.hgetall(h)).toEqual({ a: "a5", b: "b4" });
  });

  it("a folded write refused by its target (a wrong type) fails the commit for good and changes nothing", async () => {
    const k = subject();
    const req = claimOf(k, 2);
    await store.claim(req);
    await client.rpush(inSlot("s", k), "a list");
    const ctx = { position: p(2), fence: req.fence };
    const commit = {
      key: k,
      fence: req.fence,
      identity: req.identity,
      expiresAtSeconds: 9e9,
      writes: [sink.increment(ctx, inSlot("n", k)), sink.set(ctx, inSlot("s", k), "v")],
    };
    const error = await store.commit(commit).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({
      retryable: false,
      message: expect.stringContaining("holds a list, not a string"),
    });
    expect(await store.read(k)).toMatchObject({ status: "running", fence: req.fence });
    expect(await client.exists(inSlot("n", k))).toBe(0);
    expect(await client.exists(stampRedisKey(prefix, valkeyHashTag(k).slice(1, -1)))).toBe(0);
    await client.set(inSlot("n", k), "12345678901234567890");
    await expect(sink.put(sink.increment(ctx, inSlot("n", k)))).rejects.toMatchObject({ retryable: false });
  });

  it("one slot per script: a write tagged as another subject cannot fold; the state key, its targets and stamps share a slot", async () => {
    const k = subject();
    const other = subject();
    const req = claimOf(k, 1);
    const foreign = sink.set({ position: p(1), fence: req.fence }, inSlot("s", other), "v");
    await expect(store.claimAndCommit({ ...req, writes: [foreign] })).rejects.toBeInstanceOf(
      UnsupportedAtomicWriteError,
    );
    expect(await store.read(k)).toBeUndefined();
    await store.claim(req);
    await expect(
      store.commit({
        key: k,
        fence: req.fence,
        identity: req.identity,
        expiresAtSeconds: 9e9,
        writes: [foreign],
      }),
    ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    expect(await store.read(k)).toMatchObject({ status: "running" });
    const own = sink.set({ position: p(1), fence: req.fence }, inSlot("s", k), "v");
    const slot = keySlot(store.redisKeyOf(k));
    expect(keySlot(own.key)).toBe(slot);
    expect(keySlot(own.stamp?.key as string)).toBe(slot);
    expect(keySlot("123456789")).toBe(12739); // the CRC16 check value: the library is Redis Cluster's hash
    // Braces in a state key are escaped, so they neither end the tag early nor move the key to another slot.
    const braced = "o#{a}b";
    expect(keySlot(store.redisKeyOf(braced))).toBe(keySlot(inSlot("x", braced)));
    expect(keySlot(store.redisKeyOf(braced))).not.toBe(keySlot("{a}"));
  });

  it("folds only writes for its own client; a key needs a hash tag", async () => {
    const otherClient = testClient();
    const otherStore = new ValkeyStore({ client: otherClient, keyPrefix: prefix });
    const k = subject();
    const foreign = new ValkeyFencedSink({ store: otherStore }).set(
      { position: p(1), fence: 1 },
      inSlot("s", k),
      "v",
    );
    expect(store.canFold(foreign)).toBe(false);
    expect(otherStore.canFold(foreign)).toBe(true);
    expect(store.canFold({ engine: "memory", description: "x" })).toBe(false);
    await expect(store.claimAndCommit({ ...claimOf(k, 1), writes: [foreign] })).rejects.toBeInstanceOf(
      UnsupportedAtomicWriteError,
    );
    expect(() => sink.set({ position: p(1), fence: 1 }, `${prefix}untagged`, "v")).toThrow(OptionsError);
    expect(() => sink.set({ position: p(1), fence: 0 }, inSlot("s", k), "v")).toThrow(OptionsError);
    await otherClient.quit();
  });

  it("an unfenced write (valkeyWrite) applies on every commit that folds it", async () => {
    const k = subject();
    const log = inSlot("log", k);
    for (const pos of [1, 2]) {
      const req = claimOf(k, pos);
      const out = await store.claimAndCommit({
        ...req,
        writes: [valkeyWrite(store, "rpush", log, `f${req.fence}`)],
      });
      expect(out).toMatchObject({ claimed: true, writes: [{ status: "applied" }] });
    }
    expect(await client.llen(log)).toBe(2);
    expect(() => valkeyWrite(store, "incr", log, "1.5")).toThrow(OptionsError);
  });
});
