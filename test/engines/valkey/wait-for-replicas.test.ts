import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "../../../src/core/errors.js";
import { createGuard } from "../../../src/core/guard.js";
import { ReplicasNotReachedError } from "../../../src/engines/valkey/errors.js";
import { countValkeyCommands } from "../../../src/engines/valkey/request-counter.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { guardEvent, millisecondApartClock } from "../../kit/index.js";
import { claimOf, deleteKeys, testClient, testPrefix, warm } from "./harness.js";

/**
 * `waitForReplicas` on a server with fewer replicas than asked for (this machine's Redis has none: the test asks for
 * one more than INFO reports): every write step lands on the primary, and is then reported as not replicated.
 */
describe("valkey waitForReplicas", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let wanted: number;

  beforeAll(async () => {
    client = testClient();
    prefix = testPrefix();
    const info = await client.info("replication");
    wanted = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0) + 1;
    await warm(new ValkeyStore({ client, keyPrefix: prefix }));
    store = new ValkeyStore({
      client,
      keyPrefix: prefix,
      waitForReplicas: { replicas: wanted, timeoutMs: 20 },
    });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  it("a claim that no replica acknowledged is a retryable ReplicasNotReachedError; it landed on the primary", async () => {
    const commands = countValkeyCommands(client);
    const k = `o#b/${randomUUID()}`;
    const req = claimOf(k, 1);
    const error = await store.claim(req).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicasNotReachedError);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ retryable: true, wanted, acknowledged: wanted - 1, timeoutMs: 20 });
    expect((error as Error).message).toContain("a failover could lose it");
    // One round trip: the script and WAIT in one pipeline.
    expect(commands.counts).toEqual({ EVALSHA: 1, WAIT: 1 });
    expect(await store.read(k)).toMatchObject({ status: "running", token: req.token });
    // The retry recognises its landed claim, and waits again (WAIT covers the connection's earlier writes).
    await expect(store.claim(req)).rejects.toBeInstanceOf(ReplicasNotReachedError);
    await expect(store.release({ key: k, fence: req.fence })).rejects.toBeInstanceOf(ReplicasNotReachedError);
  });

  it("through the guard the event is never acknowledged: the claim is unconfirmed", async () => {
    const g = createGuard({ store, clock: millisecondApartClock(), leaseMs: 2000 });
    let ran = false;
    const out = await g.run(guardEvent(`bucket/${randomUUID()}`, 1), async () => {
      ran = true;
    });
    expect(out.status).toBe("unconfirmed");
    expect(ran).toBe(false);
  });
});
