import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { dynamoDBClient } from "../../src/local/dynamodb-local.js";
import { countRequests, type RequestCounter } from "../../src/observe/request-counter.js";
import { DynamoDBFencedSink } from "../../src/sinks/dynamodb.js";
import type { AtomicWrite, StateStore } from "../../src/stores/contract.js";
import { createStateTable, createTableIfMissing } from "../../src/stores/dynamodb/schema.js";
import { DynamoDBStore } from "../../src/stores/dynamodb/store.js";
import { type MemoryAtomicWrite, MemoryStore } from "../../src/stores/memory.js";

/** A fenced target row that can be written atomically with a commit, per engine. */
export interface TestSink {
  atomic(ctx: { position: string | undefined; fence: number }, key: string, value: string): AtomicWrite;
  read(key: string): Promise<{ value: string; srcPos: string; srcFence: number } | undefined>;
}

export interface StoreUnderTest {
  name: string;
  store: StateStore;
  sink: TestSink;
  requests?: RequestCounter;
  close(): Promise<void>;
}

export type StoreFactory = { name: string; make(): Promise<StoreUnderTest> };

/** Every store the contract suite runs against. Add a new engine here and it runs the whole suite. */
export const ALL_STORES: StoreFactory[] = [
  {
    name: "dynamodb",
    async make() {
      const client = dynamoDBClient(inject("dynamodbEndpoint"));
      const suffix = randomUUID().slice(0, 8);
      const tableName = `state-${suffix}`;
      const sinkTable = `sink-${suffix}`;
      await createStateTable(client, { tableName });
      await createTableIfMissing(client, sinkTable, "pk");
      const requests = countRequests(client);
      const sink = new DynamoDBFencedSink({ client, tableName: sinkTable });
      return {
        name: "dynamodb",
        store: new DynamoDBStore({ client, tableName }),
        requests,
        sink: {
          atomic: (ctx, key, value) => sink.atomicPut(ctx, { pk: key, value }),
          read: async (key) => {
            const row = await sink.get(key);
            return row
              ? { value: String(row.value), srcPos: String(row.srcPos), srcFence: Number(row.srcFence) }
              : undefined;
          },
        },
        close: async () => client.destroy(),
      };
    },
  },
  {
    name: "memory",
    async make() {
      const rows = new Map<string, { value: string; srcPos: string; srcFence: number }>();
      return {
        name: "memory",
        store: new MemoryStore(),
        sink: {
          atomic: (ctx, key, value): MemoryAtomicWrite => ({
            engine: "memory",
            description: `put ${key}`,
            apply: () => {
              const pos = ctx.position ?? "";
              const old = rows.get(key);
              if (old && (old.srcPos > pos || (old.srcPos === pos && old.srcFence >= ctx.fence)))
                return false;
              rows.set(key, { value, srcPos: pos, srcFence: ctx.fence });
              return true;
            },
          }),
          read: async (key) => rows.get(key),
        },
        close: async () => {},
      };
    },
  },
];

/**
 * The engines this run tests: `EONCE_STORES=memory,dynamodb` (default: all), intersected with the engines the
 * vitest project allows (`EONCE_PROJECT_STORES`, set in vitest.config.ts: the unit project has no DynamoDB Local).
 */
export const STORES: StoreFactory[] = selectStores(
  process.env.EONCE_STORES,
  process.env.EONCE_PROJECT_STORES,
);

export function selectStores(wanted: string | undefined, allowed: string | undefined): StoreFactory[] {
  const names = (list: string | undefined) =>
    list
      ?.split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  const known = ALL_STORES.map((s) => s.name);
  const w = names(wanted);
  for (const n of w ?? []) {
    if (!known.includes(n))
      throw new Error(`EONCE_STORES: unknown store ${JSON.stringify(n)} (${known.join(", ")})`);
  }
  const a = names(allowed);
  return ALL_STORES.filter((s) => (!w || w.includes(s.name)) && (!a || a.includes(s.name)));
}
