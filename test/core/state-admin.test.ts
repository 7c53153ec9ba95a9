import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import { positionFromNumber } from "../../src/core/position.js";
import { leaseExpired, type StateRecord } from "../../src/core/state.js";
import {
  FORGET_CLOCK_SKEW_MS,
  forgetLeaseBoundMs,
  forgetRefused,
  forgetWaitMs,
  type StateAdmin,
} from "../../src/core/state-admin.js";
import type { StateStore } from "../../src/core/store.js";
import { MemoryStateAdmin } from "../../src/engines/memory/admin.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { SqliteStateAdmin } from "../../src/engines/sqlite/admin.js";

/**
 * `forget`'s lease check, one function in core for every engine's admin: a lease counts until the guard's clock
 * skew grace after its end, as the guard's own takeover rule (state.ts leaseExpired) says. The server engines run the
 * same check through test/cli/state.test.ts.
 */

const running = (leaseUntilMs: number): StateRecord => ({
  key: "o#a/b",
  status: "running",
  position: positionFromNumber(1),
  identity: "i",
  fence: 1,
  leaseUntilMs,
  attempts: 1,
});

describe("forgetRefused and forgetLeaseBoundMs", () => {
  it("refuse exactly while a claimer with the same grace could not take over", () => {
    const nowMs = 1_800_000_000_000;
    for (const clockSkewMs of [0, 1, 250, 1000]) {
      for (let endedAgoMs = -5; endedAgoMs <= clockSkewMs + 5; endedAgoMs++) {
        const state = running(nowMs - endedAgoMs);
        const takeover = leaseExpired(state, { nowMs, leaseGraceMs: clockSkewMs });
        expect(forgetRefused(state, { nowMs, clockSkewMs })).toBe(!takeover);
        // The bound the SQL and DynamoDB conditions use says the same.
        expect((state.leaseUntilMs ?? 0) > forgetLeaseBoundMs({ nowMs, clockSkewMs })).toBe(!takeover);
      }
    }
  });

  it("default to the guard's default grace; say how long to wait; --force and other statuses are never refused", () => {
    const nowMs = 1_800_000_000_000;
    const ended200MsAgo = running(nowMs - 200);
    expect(FORGET_CLOCK_SKEW_MS).toBe(1000);
    expect(forgetRefused(ended200MsAgo, { nowMs })).toBe(true);
    expect(forgetWaitMs(ended200MsAgo, { nowMs })).toBe(801);
    expect(forgetRefused(ended200MsAgo, { nowMs: nowMs + 801 })).toBe(false);
    expect(forgetRefused(ended200MsAgo, { nowMs: nowMs + 800 })).toBe(true);
    expect(forgetRefused(ended200MsAgo, { nowMs, clockSkewMs: 199 })).toBe(false);
    expect(forgetRefused(running(nowMs + 600_000), { nowMs, force: true })).toBe(false);
    expect(forgetLeaseBoundMs({ nowMs, force: true })).toBe(Number.MAX_SAFE_INTEGER);
    expect(forgetRefused({ ...ended200MsAgo, status: "released" }, { nowMs })).toBe(false);
    expect(forgetWaitMs({ ...ended200MsAgo, status: "done" }, { nowMs })).toBe(0);
    expect(() => forgetRefused(ended200MsAgo, { nowMs, clockSkewMs: -1 })).toThrow(OptionsError);
    expect(() => forgetLeaseBoundMs({ nowMs, force: "yes" as unknown as boolean })).toThrow(OptionsError);
  });
});

const dir = mkdtempSync(join(tmpdir(), "eonce-state-admin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ADMINS: { name: string; make(): StateAdmin }[] = [
  { name: "memory", make: () => new MemoryStateAdmin(new MemoryStore()) },
  {
    name: "sqlite",
    make: () => new SqliteStateAdmin({ filename: join(dir, `${Date.now()}-${Math.random()}.db`) }),
  },
];

describe.each(ADMINS)("$name admin: forget", ({ make }) => {
  /** A claim whose lease ended at `endMs`. */
  async function claim(store: StateStore, key: string, endMs: number): Promise<number> {
    const fence = (endMs - 30_000) * 1000;
    const r = await store.claim({
      key,
      position: positionFromNumber(1),
      identity: "i",
      nowMs: endMs - 30_000,
      leaseUntilMs: endMs,
      expiresAtSeconds: Math.ceil(endMs / 1000) + 3600,
      supersede: false,
      fence,
      token: "t",
      leaseGraceMs: 0,
    });
    expect(r.claimed).toBe(true);
    return fence;
  }

  it("refuses a lease that ended 200 ms ago by the operator's clock; forgets it with force or past the grace", async () => {
    const admin = make();
    try {
      const endMs = Date.now();
      const fence = await claim(admin.store, "o#skew", endMs);
      const refused = await admin.forget("o#skew", { nowMs: endMs + 200 });
      expect(refused).toMatchObject({ forgotten: false, state: { fence, status: "running" } });
      expect(await admin.store.read("o#skew")).toMatchObject({ fence });
      expect(await admin.forget("o#skew", { nowMs: endMs + 200, force: true })).toMatchObject({
        forgotten: true,
        state: { fence },
      });
      expect(await admin.store.read("o#skew")).toBeUndefined();

      await claim(admin.store, "o#late", endMs);
      expect((await admin.forget("o#late", { nowMs: endMs + 1000 })).forgotten).toBe(false);
      expect((await admin.forget("o#late", { nowMs: endMs + 1001 })).forgotten).toBe(true);
      expect(await admin.forget("o#none", { nowMs: endMs })).toEqual({ forgotten: false });
      await expect(admin.forget("o#late", { nowMs: endMs, clockSkewMs: -1 })).rejects.toThrow(OptionsError);
    } finally {
      await admin.close();
    }
  });

  it("lists held or stuck first, without results", async () => {
    const admin = make();
    try {
      const nowMs = Date.now();
      await claim(admin.store, "o#expired", nowMs - 60_000);
      await claim(admin.store, "o#live", nowMs + 60_000);
      const listed = await admin.list({ limit: 10, nowMs });
      expect(listed.map((r) => r.key)).toEqual(["o#expired", "o#live"]);
      expect(await admin.list({ limit: 1, nowMs, status: "done" })).toEqual([]);
      for (const r of listed) expect(r.result).toBeUndefined();
    } finally {
      await admin.close();
    }
  });
});
