import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKeyOfRedisKey } from "../../../src/engines/valkey/keys.js";
import { countValkeyCommands } from "../../../src/engines/valkey/request-counter.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { claimOf, deleteKeys, losingClient, testClient, testPrefix, VALKEY_URL, warm } from "./harness.js";

const p = positionFromNumber;

describe("valkey store", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  const key = () => `o#b/${randomUUID()}`;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  describe("lost responses: a step that landed is recognised by its retry, at one round trip each", () => {
    let lossy: Redis;
    let s: ValkeyStore;
    let lost: { lose(count: number): void };
    beforeAll(async () => {
      lossy = testClient();
      s = new ValkeyStore({ client: lossy, keyPrefix: prefix });
      await warm(s);
      lost = losingClient(lossy);
    });
    afterAll(async () => {
      await lossy.quit();
    });

    it("claim (retried with another fence), commit, release and apply", async () => {
      const commands = countValkeyCommands(lossy);
      const k = key();
      const req = claimOf(k, 2);
      lost.lose(1);
      const error = await s.claim(req).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).retryable).toBe(true);
      expect(await s.claim({ ...req, fence: req.fence + 7 })).toMatchObject({
        claimed: true,
        fence: req.fence,
        attempt: 1,
      });
      lost.lose(1);
      const commit = { key: k, fence: req.fence, identity: req.identity, expiresAtSeconds: 9e9 };
      await expect(s.commit(commit)).rejects.toBeInstanceOf(StoreError);
      expect(await s.commit(commit)).toEqual({ committed: true, writes: [] });
      const r2 = claimOf(k, 3);
      await s.claim(r2);
      lost.lose(1);
      await expect(s.release({ key: k, fence: r2.fence })).rejects.toBeInstanceOf(StoreError);
      expect(await s.release({ key: k, fence: r2.fence })).toEqual({ ok: true });
      const r3 = claimOf(k, 4);
      lost.lose(1);
      await expect(s.claimAndCommit(r3)).rejects.toBeInstanceOf(StoreError);
      expect(await s.claimAndCommit({ ...r3, fence: r3.fence + 1 })).toEqual({ claimed: true, writes: [] });
      expect(await s.read(k)).toMatchObject({ status: "done", committedPosition: p(4), fence: r3.fence });
      // Eight steps sent, each once: the landed one and its retry.
      expect(commands.counts).toEqual({ EVALSHA: 9, HGETALL: 1 });
    });
  });

  it("counts attempts of the same identity; another identity starts at 1; a commit resets them", async () => {
    const k = key();
    const now = Date.now();
    const expired = (pos: number, at: number) => claimOf(k, pos, { nowMs: at, leaseUntilMs: at + 1 });
    expect(await store.claim(expired(2, now))).toMatchObject({ attempt: 1 });
    expect(await store.claim(expired(2, now + 10))).toMatchObject({ attempt: 2 });
    expect(await store.claim(expired(3, now + 20))).toMatchObject({ attempt: 1 });
    const last = expired(3, now + 30);
    expect(await store.claim(last)).toMatchObject({
      attempt: 2,
      previous: { attempts: 1, status: "running" },
    });
    await store.commit({ key: k, fence: last.fence, identity: last.identity, expiresAtSeconds: 9e9 });
    expect(await store.read(k)).toMatchObject({ attempts: 0, status: "done" });
  });

  it("a claim's `previous` leaves the replaced record's result out (it can be large); duplicates get it", async () => {
    const k = key();
    const req = claimOf(k, 1);
    await store.claimAndCommit({ ...req, result: '"one"' });
    const next = await store.claim(claimOf(k, 2));
    expect(next).toMatchObject({ claimed: true, previous: { status: "done", committedPosition: p(1) } });
    expect(next.claimed && next.previous?.result).toBeUndefined();
    const dup = await store.claim(claimOf(k, 1));
    expect(dup.claimed).toBe(false);
  });

  it("a result over maxResultBytes is not stored, its size is (commit and apply); one at the limit is", async () => {
    const small = new ValkeyStore({ client, keyPrefix: prefix, maxResultBytes: 10 });
    const k = key();
    const req = claimOf(k, 1);
    await small.claim(req);
    await small.commit({
      key: k,
      fence: req.fence,
      identity: req.identity,
      expiresAtSeconds: 9e9,
      result: '"ééééé"',
    });
    const over = await small.read(k);
    expect(over).toMatchObject({ status: "done", resultOmittedBytes: 12 });
    expect(over?.result).toBeUndefined();
    await small.claimAndCommit({ ...claimOf(k, 2), result: '"12345678"' });
    expect(await small.read(k)).toMatchObject({ result: '"12345678"' });
    expect((await small.read(k))?.resultOmittedBytes).toBeUndefined();
    await small.claimAndCommit({ ...claimOf(k, 3), result: '"123456789"', fingerprint: "fp" });
    expect(await small.read(k)).toMatchObject({ resultOmittedBytes: 11, committedFingerprint: "fp" });
  });

  it("the key's expiry (PEXPIREAT) follows the lease: claim, renew (never back), commit", async () => {
    const k = key();
    const redisKey = store.redisKeyOf(k);
    const now = Date.now();
    const expiry = async () => Number(await client.call("PEXPIRETIME", redisKey));
    const req = claimOf(k, 1, {
      nowMs: now,
      leaseUntilMs: now + 600_000,
      expiresAtSeconds: Math.ceil(now / 1000) + 60,
    });
    await store.claim(req);
    // Never before the lease: TTL never removes a live claim.
    expect(await expiry()).toBe(now + 600_000);
    const exp = Math.ceil(now / 1000) + 3600;
    await store.renew({ key: k, fence: req.fence, leaseUntilMs: now + 700_000, expiresAtSeconds: exp });
    expect(await expiry()).toBe(exp * 1000);
    await store.renew({ key: k, fence: req.fence, leaseUntilMs: now + 800_000, expiresAtSeconds: exp - 100 });
    expect(await store.read(k)).toMatchObject({ expiresAtSeconds: exp, leaseUntilMs: now + 800_000 });
    expect(await expiry()).toBe(exp * 1000);
    await store.commit({ key: k, fence: req.fence, identity: req.identity, expiresAtSeconds: exp + 7200 });
    expect(await expiry()).toBe((exp + 7200) * 1000);
  });

  it("an expiry in the past deletes the record at once, unless minRetentionMs keeps it", async () => {
    const k = key();
    const req = claimOf(k, 1);
    await store.claim(req);
    await store.commit({ key: k, fence: req.fence, identity: req.identity, expiresAtSeconds: 99 });
    expect(await store.read(k)).toBeUndefined();
    const kept = new ValkeyStore({ client, keyPrefix: prefix, minRetentionMs: 60_000 });
    const r2 = claimOf(k, 1);
    await kept.claim(r2);
    await kept.commit({ key: k, fence: r2.fence, identity: r2.identity, expiresAtSeconds: 99 });
    expect(await kept.read(k)).toMatchObject({ status: "done", expiresAtSeconds: 99 });
    const ttl = await client.pttl(kept.redisKeyOf(k));
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it("state keys with braces and % keep one hash tag each, apart from each other, and map back", async () => {
    const keys = ["o#a{b}", "o#a%7Bb}", "o#}{", "o#%", `u#3#{}%x{y}`];
    const redisKeys = keys.map((k) => store.redisKeyOf(k));
    expect(new Set(redisKeys).size).toBe(keys.length);
    for (const [i, k] of keys.entries()) {
      const rk = redisKeys[i] as string;
      // Exactly one tag: the prefix's last character, then braces around the escaped key only.
      expect(rk.slice(prefix.length).match(/[{}]/g)).toEqual(["{", "}"]);
      expect(stateKeyOfRedisKey(prefix, rk)).toBe(k);
      await store.claimAndCommit(claimOf(k, 1));
      expect(await store.read(k)).toMatchObject({ key: k, status: "done" });
    }
  });

  it("validates its options eagerly", () => {
    const bad: unknown[] = [
      { client, keyPrefx: "x:" },
      { client, keyPrefix: "a{b}:" },
      { client, keyPrefix: "a*:" },
      { client, maxResultBytes: 0 },
      { client, minRetentionMs: -1 },
      { client, waitForReplicas: { replicas: 0, timeoutMs: 10 } },
      { client, waitForReplicas: { replicas: 1, timeoutMs: 0 } },
      { client, waitForReplicas: { replicas: 1 } },
      { client: {} },
      { client: new Redis(VALKEY_URL, { lazyConnect: true, keyPrefix: "mine:" }) },
    ];
    for (const options of bad)
      expect(() => new ValkeyStore(options as never), JSON.stringify(Object.keys(options as object))).toThrow(
        OptionsError,
      );
  });

  it("errors are StoreErrors with their cause: a wrong type for good, a dead connection retryable", async () => {
    const k = key();
    await client.set(store.redisKeyOf(k), "not a hash");
    const wrong = await store.claim(claimOf(k, 1)).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(StoreError);
    expect(wrong).toMatchObject({ retryable: false, message: expect.stringContaining("WRONGTYPE") });
    expect((wrong as StoreError).cause).toBeInstanceOf(Error);
    const dead = new Redis("redis://127.0.0.1:1", {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    dead.on("error", () => {}); // the refused connection, reported as the claim's error below
    const down = new ValkeyStore({ client: dead, keyPrefix: prefix });
    const error = await down.claim(claimOf(key(), 1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ retryable: true });
    dead.disconnect();
  });

  it("NOSCRIPT (a server without the script: restart, failover) sends it whole, and the step runs once", async () => {
    const c = testClient();
    const s = new ValkeyStore({ client: c, keyPrefix: prefix });
    const send = c.evalsha.bind(c) as (...args: unknown[]) => Promise<unknown>;
    let refused = 0;
    (c as unknown as { evalsha: unknown }).evalsha = async (...args: unknown[]) => {
      if (refused++ === 0)
        throw Object.assign(new Error("NOSCRIPT No matching script"), { name: "ReplyError" });
      return send(...args);
    };
    const commands = countValkeyCommands(c);
    const k = key();
    expect(await s.claim(claimOf(k, 1))).toMatchObject({ claimed: true, attempt: 1 });
    expect(commands.counts).toEqual({ EVAL: 1 });
    expect(await s.read(k)).toMatchObject({ status: "running", attempts: 1 });
    await c.quit();
  });
});
