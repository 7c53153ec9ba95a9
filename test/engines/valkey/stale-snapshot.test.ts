import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { classifyRefusal, leaseExpired } from "../../../src/core/state.js";
import { stateKey } from "../../../src/core/state-key.js";
import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { guardEvent, millisecondApartClock } from "../../kit/index.js";
import { claimOf, deleteKeys, testClient, testPrefix } from "./harness.js";

const p = positionFromNumber;

/**
 * Powertools' issue #5714 (the cache persistence layer, September 2026): `_putRecord` reads the record, judges it
 * orphaned (in progress, its deadline past), then writes with an unconditional SET, so a snapshot taken before
 * another caller completed the record overwrites the completed record, and the effect runs again. Here the claim
 * decides on the record as the script finds it, in one step: a snapshot cannot be acted on.
 */
describe("valkey: a stale snapshot beside a completed record (Powertools #5714)", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    store = new ValkeyStore({ client, keyPrefix: prefix });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("a caller that read 'running, lease expired' and claims after another completed the event is refused: duplicate", async () => {
    const k = `o#b/${randomUUID()}`;
    const now = Date.now();
    const crashed = claimOf(k, 7, { nowMs: now, leaseUntilMs: now + 5 });
    await store.claim(crashed);
    // Caller A reads the record and judges it orphaned.
    const snapshot = await store.read(k);
    const a = claimOf(k, 7, { nowMs: now + 50 });
    expect(snapshot).toMatchObject({ status: "running" });
    expect(leaseExpired(snapshot as never, a)).toBe(true);
    // Meanwhile B takes the claim over and completes the event.
    const b = claimOf(k, 7, { nowMs: now + 40 });
    expect(await store.claim(b)).toMatchObject({ claimed: true });
    await store.commit({
      key: k,
      fence: b.fence,
      identity: b.identity,
      expiresAtSeconds: 9e9,
      result: '"B"',
    });
    // A acts on its snapshot, with a fence above every other: refused on the record as it is now.
    const out = await store.claim({ ...a, fence: a.fence + 1_000_000 });
    expect(out.claimed).toBe(false);
    expect(!out.claimed && classifyRefusal(out.state, a)?.kind).toBe("duplicate");
    expect(await store.read(k)).toMatchObject({ status: "done", result: '"B"', fence: b.fence });
    // apply (claim and commit in one) is refused the same way.
    const applied = await store.claimAndCommit({ ...a, token: randomUUID(), fence: a.fence + 2_000_000 });
    expect(applied.claimed).toBe(false);
    expect(await store.read(k)).toMatchObject({ status: "done", result: '"B"' });
  });

  it("through the guard: redeliveries racing over a crashed holder's expired claim run the effect once", async () => {
    const sink = new ValkeyFencedSink({ store });
    const s = `bucket/${randomUUID()}`;
    const key = stateKey(s, "", true);
    const counter = `${prefix}count:${valkeyHashTag(key)}`;
    const now = Date.now();
    await store.claim(claimOf(key, 3, { nowMs: now, leaseUntilMs: now + 5 })); // crashed: never renews
    await new Promise((r) => setTimeout(r, 20));
    const g = createGuard({ store, clock: millisecondApartClock() });
    const deliveries = await Promise.all(
      Array.from({ length: 8 }, () =>
        g.run(guardEvent(s, 3), async (ctx) => ctx.atCommit(sink.increment(ctx, counter))),
      ),
    );
    expect(deliveries.filter((d) => d.status === "processed")).toHaveLength(1);
    expect(deliveries.every((d) => ["processed", "in-flight", "duplicate"].includes(d.status))).toBe(true);
    expect((await g.run(guardEvent(s, 3), async () => {})).status).toBe("duplicate");
    expect(await client.get(counter)).toBe("1");
    expect(await store.read(key)).toMatchObject({ status: "done", committedPosition: p(3) });
  });
});
