import { MemoryOutbox } from "../../../src/engines/memory/outbox.js";
import { type MemoryAtomicWrite, MemoryStore } from "../../../src/engines/memory/store.js";
import { losingResponses, type StoreUnderTest } from "../../kit/stores.js";

/** The memory engine of the store and guard suites (test/kit/stores.ts): its sink rows a map beside the store. */
export const storesUnderTest = { memory: () => memoryUnderTest() };

/** `memory`: a store of its own, or the one given (an engine built on this one, as the test suite's toy). */
export async function memoryUnderTest(memory = new MemoryStore(), name = "memory"): Promise<StoreUnderTest> {
  const rows = new Map<string, { value: string; srcPos: string; srcFence: number }>();
  const fencedPut = (ctx: { position: string | undefined; fence: number }, key: string, value: string) => {
    const pos = ctx.position ?? "";
    const old = rows.get(key);
    if (old && (old.srcPos > pos || (old.srcPos === pos && old.srcFence >= ctx.fence))) return false;
    rows.set(key, { value, srcPos: pos, srcFence: ctx.fence });
    return true;
  };
  const { store, lose } = losingResponses(memory);
  const outbox = new MemoryOutbox();
  return {
    name,
    store,
    outbox: { outbox, reader: async () => outbox },
    forget: async (key) => memory.forget(key),
    loseResponses: lose,
    rawItem: async (key) => {
      const r = await memory.read(key);
      return r
        ? { attributes: Object.keys(r).sort(), bytes: Buffer.byteLength(JSON.stringify(r)) }
        : undefined;
    },
    sink: {
      atomic: (ctx, key, value): MemoryAtomicWrite => ({
        engine: "memory",
        description: `put ${key}`,
        land: () => fencedPut(ctx, key, value),
      }),
      put: async (ctx, key, value) => (fencedPut(ctx, key, value) ? "applied" : "stale"),
      read: async (key) => rows.get(key),
      rowFor: (stateKey) => `row-${stateKey}`,
    },
    close: async () => {},
  };
}
