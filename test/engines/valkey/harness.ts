import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { positionFromNumber } from "../../../src/core/position.js";
import type { ClaimRequest } from "../../../src/core/state.js";
import { TEST_VALKEY_URL, type ValkeyClient } from "../../../src/engines/valkey/client.js";
import { LUA_BARRIER } from "../../../src/engines/valkey/lua.js";
import { internalsOf, type ValkeyStore } from "../../../src/engines/valkey/store.js";

/** The server the suites run on: EONCE_VALKEY_URL, the run's server (test/global-setup.ts). */
export const VALKEY_URL = TEST_VALKEY_URL;

export function testClient(): Redis {
  // A few retries only, then the client gives up for good: a test against a server that is down fails in seconds
  // instead of reconnecting for ever under each command's retries.
  return new Redis(VALKEY_URL, {
    maxRetriesPerRequest: 2,
    connectTimeout: 3000,
    retryStrategy: (times) => (times > 3 ? null : 100 * times),
  });
}

/** A key prefix of this run's own: the suite deletes only keys under it. */
export function testPrefix(): string {
  return `eonce-test:${randomUUID()}:`;
}

/** Deletes every key under `prefix` (SCAN, then DEL): never FLUSHALL or FLUSHDB, the server is shared. */
export async function deleteKeys(client: ValkeyClient, prefix: string): Promise<number> {
  const node = client as Redis;
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) deleted += await node.del(...keys);
  } while (cursor !== "0");
  return deleted;
}

/**
 * Lost responses on demand: the next `count` scripts run on the server, then the client sees an error, as when the
 * connection drops before the answer (the guard, or the test, sends the step again).
 */
export function losingClient(client: Redis): { lose(count: number): void } {
  let toLose = 0;
  for (const how of ["evalsha", "eval"] as const) {
    const send = client[how].bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as Record<string, unknown>)[how] = async (...args: unknown[]) => {
      const out = await send(...args);
      if (toLose > 0) {
        toLose--;
        throw new Error("response lost (injected)");
      }
      return out;
    };
  }
  return {
    lose(count) {
      toLose += count;
    },
  };
}

let lastFence = 0;
/** A claim as the guard makes one: a fence from the clock in microseconds, above the last one. */
export function claimOf(key: string, pos: number, overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  const nowMs = overrides.nowMs ?? Date.now();
  lastFence = Math.max(lastFence + 1, nowMs * 1000);
  return {
    key,
    position: positionFromNumber(pos),
    identity: `${positionFromNumber(pos)}:created`,
    nowMs,
    leaseUntilMs: nowMs + 10_000,
    expiresAtSeconds: Math.ceil(nowMs / 1000) + 3600,
    supersede: false,
    fence: lastFence,
    token: randomUUID(),
    leaseGraceMs: 0,
    ...overrides,
  };
}

/** Runs every script once on the store's connection (a refused release and renew, a claim and its commit). */
export async function warm(store: ValkeyStore): Promise<void> {
  const k = `o#warm/${randomUUID()}`;
  const req = claimOf(k, 1);
  await store.claim(req);
  await store.renew({ key: k, fence: req.fence, leaseUntilMs: req.leaseUntilMs, expiresAtSeconds: 9e9 });
  await store.release({ key: k, fence: 1 });
  await store.commit({ key: k, fence: req.fence, identity: req.identity, expiresAtSeconds: 9e9 });
  await store.claimAndCommit(claimOf(k, 2));
  // The waitForReplicas variants (lua.ts LUA_BARRIER) too, loaded without running them.
  const client = internalsOf(store).client as Redis;
  for (const lua of Object.values(LUA_BARRIER)) await client.script("LOAD", lua);
}
