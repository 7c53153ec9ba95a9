import { createRequire } from "node:module";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import { escapeTag, outboxHintRedisKey, outboxRedisKey } from "../../../src/engines/valkey/keys.js";
import { ValkeyOutbox } from "../../../src/engines/valkey/outbox.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { deleteKeys, testClient, testPrefix } from "./harness.js";

/** Redis Cluster's slot of a key (CRC16 of its hash tag, mod 16384): ioredis's own dependency. */
const keySlot = createRequire(import.meta.url)("cluster-key-slot") as (key: string) => number;
const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/outbox" } as const;

describe("valkey outbox", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let outbox: ValkeyOutbox;
  const later = () => Date.now() + 1_000;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
    outbox = new ValkeyOutbox({ store });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("validates its options when made", () => {
    expect(() => new ValkeyOutbox({} as never)).toThrow(OptionsError);
    expect(() => new ValkeyOutbox({ store: client } as never)).toThrow(/a ValkeyStore/);
    expect(() => new ValkeyOutbox({ store, readerClient: {} as never })).toThrow(OptionsError);
    expect(() => new ValkeyOutbox({ store, sweepIntervalMs: 0 })).toThrow(/sweepIntervalMs/);
    expect(() => new ValkeyOutbox({ store, leaseMs: 1 } as never)).toThrow(OptionsError);
  });

  it("writes an entry in the committing state key's slot, and hints its tag after the commit", async () => {
    const subject = `slot/{a}%b-${Date.now()}`;
    const key = stateKey(subject, "e1", true);
    const guard = createGuard({ store, outbox });
    const r = await guard.run({ subject, identity: "e1", position: positionFromNumber(1) }, async (ctx) => {
      ctx.publish(QUEUE, "m");
    });
    expect(r.status).toBe("processed");
    const entryKey = outboxRedisKey(prefix, escapeTag(key));
    expect(keySlot(entryKey)).toBe(keySlot(store.redisKeyOf(key)));
    expect(await client.zcard(entryKey)).toBe(1);
    expect(await client.sismember(outboxHintRedisKey(prefix), escapeTag(key))).toBe(1);
  });

  it("commits when the hint cannot be written; the sweep finds the entry", async () => {
    const hints = outboxHintRedisKey(prefix);
    await client.del(hints);
    await client.set(hints, "not a set"); // SADD now fails (WRONGTYPE), after the commit's script landed
    try {
      const subject = `unhinted-${Date.now()}`;
      const guard = createGuard({ store, outbox });
      const r = await guard.run({ subject, identity: "e1" }, async (ctx) => void ctx.publish(QUEUE, "m"));
      expect(r.status).toBe("processed");
      expect((await outbox.pending()).map((e) => e.subject)).toContain(subject);
    } finally {
      await client.del(hints);
    }
    // A relay's first claim sweeps: the entry is found, and its tag hinted for the other relays.
    const reader = new ValkeyOutbox({ store });
    const nowMs = Date.now();
    const claimed = await reader.claim({ limit: 1000, owner: "r", nowMs, leaseUntilMs: later() });
    expect(claimed.map((e) => e.body)).toContain("m");
    expect(await client.scard(hints)).toBeGreaterThan(0);
  });

  it("drops a tag from the hints once its entries are all sent, and only then", async () => {
    const subject = `drop-${Date.now()}`;
    const tag = escapeTag(stateKey(subject, "e1", true));
    const guard = createGuard({ store, outbox });
    for (const e of [1, 2]) {
      await guard.run({ subject, identity: `e${e}`, position: positionFromNumber(e) }, async (ctx) => {
        ctx.publish(QUEUE, `m${e}`);
      });
    }
    const reader = new ValkeyOutbox({ store, sweepIntervalMs: 3_600_000 });
    const hinted = () => client.sismember(outboxHintRedisKey(prefix), tag);
    for (const body of ["m1", "m2"]) {
      const mine = (
        await reader.claim({ limit: 1000, owner: "r", nowMs: Date.now(), leaseUntilMs: later() })
      ).filter((e) => e.subject === subject);
      expect(mine.map((e) => e.body)).toEqual([body]);
      expect(await reader.markSent(mine[0]!, Date.now())).toBe(true);
      expect(await hinted()).toBe(1); // the claim saw an entry: the hint stays
    }
    await reader.claim({ limit: 1000, owner: "r", nowMs: Date.now(), leaseUntilMs: later() });
    expect(await hinted()).toBe(0);
    expect(await client.exists(outboxRedisKey(prefix, tag))).toBe(0); // no sent marker is kept
  });
});
