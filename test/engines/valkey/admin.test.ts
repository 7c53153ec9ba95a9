import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { ValkeyStateAdmin } from "../../../src/engines/valkey/admin.js";
import type { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { claimOf, deleteKeys, testClient, testPrefix } from "./harness.js";

const p = positionFromNumber;

describe("valkey state admin", () => {
  let client: Redis;
  let prefix: string;
  let admin: ValkeyStateAdmin;
  let store: ValkeyStore;
  const now = Date.now();

  beforeAll(async () => {
    client = testClient();
    prefix = testPrefix();
    admin = new ValkeyStateAdmin({ client, keyPrefix: prefix });
    store = admin.store;
    // A done, a released, a live and a stuck (expired lease) record, and keys of the prefix that are not state.
    await store.claimAndCommit({ ...claimOf("o#done", 1, { fence: (now - 1000) * 1000 }), result: '"big"' });
    const released = claimOf("o#released", 1, { fence: (now - 2000) * 1000 });
    await store.claim(released);
    await store.release({ key: "o#released", fence: released.fence });
    await store.claim(claimOf("o#live", 1, { fence: (now - 3000) * 1000, leaseUntilMs: now + 60_000 }));
    await store.claim(
      claimOf("o#stuck{1}", 1, { fence: (now - 5000) * 1000, nowMs: now - 5000, leaseUntilMs: now - 4000 }),
    );
    await client.set(`${prefix}row:{o#done}`, "user data");
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await admin.close();
  });

  it("lists stuck, running, released, done; filters by status and claim time; limits; leaves results out", async () => {
    const all = await admin.list({ limit: 10, nowMs: now });
    expect(all.map((r) => r.key)).toEqual(["o#stuck{1}", "o#live", "o#released", "o#done"]);
    expect(all.every((r) => r.result === undefined)).toBe(true);
    expect((await admin.list({ limit: 10, nowMs: now, status: "running" })).map((r) => r.key)).toEqual([
      "o#stuck{1}",
      "o#live",
    ]);
    // Claim times come from the fences (the guard's clock in microseconds).
    expect(
      (await admin.list({ limit: 10, nowMs: now, claimedBeforeMs: now - 2500 })).map((r) => r.key),
    ).toEqual(["o#stuck{1}", "o#live"]);
    expect(await admin.list({ limit: 1, nowMs: now })).toHaveLength(1);
  });

  it("forget: refused while a lease holds (with the clock-skew grace), unless forced; deletes otherwise", async () => {
    expect(await admin.forget("o#live", { nowMs: now })).toMatchObject({
      forgotten: false,
      state: { key: "o#live" },
    });
    expect(await admin.forget("o#stuck{1}", { nowMs: now - 3500 })).toMatchObject({ forgotten: false });
    expect(await admin.forget("o#stuck{1}", { nowMs: now })).toMatchObject({
      forgotten: true,
      state: { key: "o#stuck{1}", status: "running" },
    });
    expect(await admin.forget("o#live", { nowMs: now, force: true })).toMatchObject({ forgotten: true });
    expect(await admin.forget("o#done", { nowMs: now })).toMatchObject({
      forgotten: true,
      state: { status: "done", committedPosition: p(1) },
    });
    expect(await admin.forget("o#absent", { nowMs: now })).toEqual({ forgotten: false });
    expect(await store.read("o#done")).toBeUndefined();
    expect(await client.get(`${prefix}row:{o#done}`)).toBe("user data");
    await expect(admin.forget("o#released", { nowMs: -1 })).rejects.toBeInstanceOf(OptionsError);
  });

  it("claimedAt: a record claimed now is listed before a later bound", async () => {
    const k = `o#${randomUUID()}`;
    await store.claim(claimOf(k, 1));
    const listed = await admin.list({ limit: 100, nowMs: Date.now(), claimedBeforeMs: Date.now() + 1000 });
    expect(listed.map((r) => r.key)).toContain(k);
  });
});
