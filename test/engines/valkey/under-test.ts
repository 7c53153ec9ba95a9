import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { ValkeyOutbox } from "../../../src/engines/valkey/outbox.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import type { StoreUnderTest } from "../../kit/stores.js";
import { deleteKeys, losingClient, testClient, testPrefix } from "./harness.js";

/**
 * The valkey engine of the store and guard suites (test/kit/stores.ts ALL_STORES): a key prefix of the suite's own
 * on this machine's Redis, deleted after. The sink rows are strings in the state key's slot (its hash tag), so, as
 * for inline state, a commit cannot fold a write to another subject's row (`rowPerStateKey`: the store refuses it
 * with UnsupportedAtomicWriteError; in a cluster it would be another slot). `minRetentionMs`: the suites commit with
 * fixed expiries long past (`expiresAtSeconds: 99`), which the server would honour at once.
 */
export async function valkeyStoreUnderTest(): Promise<StoreUnderTest> {
  const client = testClient();
  const prefix = testPrefix();
  const lost = losingClient(client);
  const store = new ValkeyStore({ client, keyPrefix: prefix, minRetentionMs: 3_600_000 });
  const sink = new ValkeyFencedSink({ store });
  const outbox = new ValkeyOutbox({ store });
  // Each reader on a connection of its own, as relays in processes of their own: they race on the server.
  const readerClients: ReturnType<typeof testClient>[] = [];
  return {
    name: "valkey",
    store,
    sink: {
      rowPerStateKey: true,
      rowFor: (stateKey) => `${prefix}row:${valkeyHashTag(stateKey)}`,
      atomic: (ctx, key, value) => sink.set(ctx, key, value),
      put: (ctx, key, value) => sink.put(sink.set(ctx, key, value)),
      read: async (key) => {
        const value = await client.get(key);
        const stamp = await sink.stamp(key);
        if (value === null || !stamp) return undefined;
        return { value, srcPos: stamp.position, srcFence: stamp.fence };
      },
    },
    outbox: {
      outbox,
      reader: async () => {
        const readerClient = testClient();
        readerClients.push(readerClient);
        return new ValkeyOutbox({ store, readerClient });
      },
    },
    forget: async (key) => {
      await client.del(store.redisKeyOf(key));
    },
    loseResponses: (count) => lost.lose(count),
    rawItem: async (key) => {
      const hash = await client.hgetall(store.redisKeyOf(key));
      const fields = Object.entries(hash);
      if (fields.length === 0) return undefined;
      const bytes = fields.reduce((n, [f, v]) => n + Buffer.byteLength(f) + Buffer.byteLength(v), 0);
      return { attributes: fields.map(([f]) => f).sort(), bytes };
    },
    close: async () => {
      await deleteKeys(client, prefix);
      await client.quit();
      await Promise.all(readerClients.map((c) => c.quit()));
    },
  };
}

/** The valkey engine of the store and guard suites (test/kit/stores.ts). */
export const storesUnderTest = { valkey: valkeyStoreUnderTest };
