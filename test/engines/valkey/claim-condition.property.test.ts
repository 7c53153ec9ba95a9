import { randomUUID } from "node:crypto";
import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClaimRequest, claimAllowed, type StateRecord } from "../../../src/core/state.js";
import { FIELDS } from "../../../src/engines/valkey/record.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { deleteKeys, testClient, testPrefix } from "./harness.js";

/**
 * The claim script (lua.ts) against the reference predicate, `claimAllowed` (src/core/state.ts), on random states
 * and requests. Positions mix cases and symbols on purpose: byte order ("B" < "a") is not a locale's order, and Lua's
 * `<` on strings would use the server's locale. Lease boundaries (lease + grace = now) are generated exactly.
 */
const position = fc.string({
  unit: fc.constantFrom("0", "1", "A", "B", "a", "b", "~", " "),
  minLength: 1,
  maxLength: 3,
});
const NOW = 1_000_000;

const state = fc.option(
  fc.record(
    {
      status: fc.constantFrom("running", "done", "released"),
      position,
      identity: fc.constantFrom("x", "y"),
      fence: fc.integer({ min: 1, max: 6 }),
      attempts: fc.integer({ min: 0, max: 3 }),
      token: fc.constantFrom("t1", "t2"),
      leaseUntilMs: fc.integer({ min: NOW - 4, max: NOW + 2 }),
      committedPosition: position,
      committedIdentity: fc.constantFrom("x", "y"),
      result: fc.constantFrom('"r"', '{"n":1}'),
    },
    { requiredKeys: ["status", "position", "identity", "fence", "attempts"] },
  ),
  { nil: undefined },
);

const request = fc.record({
  position,
  identity: fc.constantFrom("x", "y"),
  fence: fc.integer({ min: 1, max: 6 }),
  token: fc.constantFrom("t1", "t3"),
  supersede: fc.boolean(),
  leaseGraceMs: fc.integer({ min: 0, max: 3 }),
});

describe("valkey: the claim script is claimAllowed", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;

  beforeAll(() => {
    client = testClient();
    prefix = testPrefix();
    // The generated times are near 1970: keep the keys an hour by the server's clock.
    store = new ValkeyStore({ client, keyPrefix: prefix, minRetentionMs: 3_600_000 });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("lands exactly when claimAllowed holds, and writes what the memory store writes", async () => {
    await fc.assert(
      fc.asyncProperty(state, request, async (seed, r) => {
        const key = `o#p/${randomUUID()}`;
        const old = seed && ({ key, ...seed } as StateRecord);
        if (old) await client.hset(store.redisKeyOf(key), hashOf(old));
        const req: ClaimRequest = { key, ...r, nowMs: NOW, leaseUntilMs: NOW + 100, expiresAtSeconds: 2000 };
        const out = await store.claim(req);
        const after = await store.read(key);
        if (claimAllowed(old, req)) {
          const attempt = old?.identity === req.identity ? old.attempts + 1 : 1;
          expect(out).toMatchObject({ claimed: true, fence: req.fence, attempt });
          const { result: _, ...kept } = old ?? { key };
          expect(after).toEqual({
            ...kept,
            status: "running",
            position: req.position,
            identity: req.identity,
            fence: req.fence,
            token: req.token,
            leaseUntilMs: req.leaseUntilMs,
            expiresAtSeconds: req.expiresAtSeconds,
            attempts: attempt,
            ...(old?.result !== undefined ? { result: old.result } : {}),
          });
        } else {
          // Refused: nothing written; a retry of this very claim (its token, running) is recognised as claimed.
          expect(after).toEqual(old);
          const own = old?.token === req.token && old.status === "running";
          expect(out.claimed).toBe(own);
          if (!out.claimed) expect(out.state).toEqual(old);
        }
      }),
      { numRuns: 400 },
    );
  });
});

/** A record as the state hash's fields (record.ts FIELDS). */
function hashOf(r: StateRecord): Record<string, string> {
  const hash: Record<string, string> = {};
  for (const [name, field] of Object.entries(FIELDS)) {
    const v = r[name as keyof StateRecord];
    if (v !== undefined) hash[field] = String(v);
  }
  return hash;
}
