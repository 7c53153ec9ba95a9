import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGuard } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import {
  type DispatchedExecution,
  durableExecutionName,
  ValkeyStepEffects,
} from "../../../src/durable/index.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { deleteKeys, testClient, testPrefix } from "../../engines/valkey/harness.js";
import { quietLogger, quietMetrics } from "../harness.js";

/**
 * Pipelines on one server whose prefixes extend each other (`P`, `P` + `f#`, `P` + `w:`): before the role moved
 * after the hash tag, the second one's state hash was `P`'s execution fence (a claim gave it a TTL; in the other
 * order `P`'s step failed with a Lua error) and the third one's was `P`'s sink stamps (`P`'s next put was `stale`).
 */
describe("Valkey: prefixes that extend each other share no key", () => {
  let client: Redis;
  let p: string;
  const quiet = { logger: quietLogger(), metrics: quietMetrics() };
  beforeAll(() => {
    client = testClient();
    p = testPrefix();
  });
  afterAll(async () => {
    await deleteKeys(client, p);
    client.disconnect();
  });

  it("P's fence keeps no TTL and its sink takes newer work while P+f# and P+w: claim and commit the same subjects", async () => {
    const subject = `s-${randomUUID().slice(0, 8)}`;
    const store = new ValkeyStore({ client, keyPrefix: p, minRetentionMs: 3_600_000 });
    const sink = new ValkeyFencedSink({ store });
    const effects = new ValkeyStepEffects({
      client,
      keyPrefix: p,
      markerExpiresAfterSeconds: 3600,
      ...quiet,
    });
    const neighbours = ["f#", "w:", "m#"].map((ext) =>
      createGuard({ store: new ValkeyStore({ client, keyPrefix: `${p}${ext}`, minRetentionMs: 3_600_000 }) }),
    );
    const e = (v: number): DispatchedExecution => ({
      executionName: durableExecutionName(subject, `v${v}`),
      subject,
      identity: `v${v}`,
      position: positionFromNumber(v),
    });
    const target = `${p}out:${effects.hashTag(e(1))}`;
    // A neighbour first, then P's step and sink put: no Lua error, both land.
    expect(
      (await neighbours[0]?.run({ subject, identity: "v1", position: positionFromNumber(1) }, async () => 1))
        ?.status,
    ).toBe("processed");
    expect((await effects.commitStep(e(1), "charge", async () => "ok")).status).toBe("processed");
    expect(await sink.put(sink.set({ position: positionFromNumber(1), fence: 1 }, target, "one"))).toBe(
      "applied",
    );
    // Then the neighbours claim and commit the same subject, newer positions.
    for (const g of neighbours)
      expect(
        (await g.run({ subject, identity: "v2", position: positionFromNumber(2) }, async () => 2)).status,
      ).toBe("processed");
    const fence = (effects.fenceWrite(e(1)) as unknown as { key: string }).key;
    expect(await client.ttl(fence)).toBe(-1);
    expect(await client.hgetall(fence)).toMatchObject({ exec: e(1).executionName });
    expect(await sink.put(sink.set({ position: positionFromNumber(2), fence: 2 }, target, "two"))).toBe(
      "applied",
    );
    expect(await client.get(target)).toBe("two");
  });
});
