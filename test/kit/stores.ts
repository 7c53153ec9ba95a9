import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteItemCommand, type DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import Database from "better-sqlite3";
import { afterAll, beforeAll } from "vitest";
import { StoreError } from "../../src/core/errors.js";
import type { AtomicWrite, StateStore } from "../../src/core/store.js";
import { InlineDynamoDBStore } from "../../src/engines/dynamodb/inline-store.js";
import { dynamoItemBytes } from "../../src/engines/dynamodb/limits.js";
import { createStateTable, createTableIfMissing } from "../../src/engines/dynamodb/schema.js";
import { DynamoDBFencedSink } from "../../src/engines/dynamodb/sink.js";
import { DynamoDBStore } from "../../src/engines/dynamodb/store.js";
import { type MemoryAtomicWrite, MemoryStore } from "../../src/engines/memory/store.js";
import { SqliteFencedSink, SqliteStore } from "../../src/engines/sqlite/index.js";
import { countRequests, type RequestCounter } from "../../src/observe/request-counter.js";
import { valkeyStoreUnderTest } from "../engines/valkey/store-under-test.js";
import { localDynamoDB } from "./dynamodb.js";
import { inlineRows } from "./inline-rows.js";
import { postgresInlineStoreUnderTest, postgresStoreUnderTest } from "./postgres-store.js";
import { type StoreName, selectStoreNames } from "./store-names.js";

/** A fenced target row that can be written atomically with a commit, per engine. */
export interface TestSink {
  atomic(ctx: { position: string | undefined; fence: number }, key: string, value: string): AtomicWrite;
  /** The same fenced write in its own request (a handler's non-atomic effect). */
  put(
    ctx: { position: string | undefined; fence: number },
    key: string,
    value: string,
  ): Promise<"applied" | "stale">;
  read(key: string): Promise<{ value: string; srcPos: string; srcFence: number } | undefined>;
  /**
   * The row a test writes for the subject of `stateKey`. A separate sink table takes any row: here `row-<key>`.
   * Inline state (`rowPerStateKey`) can only write the committing subject's own row: the row that holds its state.
   */
  rowFor(stateKey: string): string;
  /**
   * Inline state: one row per state key, holding both the state and the user's attributes. A write to another
   * subject's row cannot be folded into a commit by design (it would need a transaction, which inline state exists
   * to avoid): the store refuses it with UnsupportedAtomicWriteError, and the contract suite asserts exactly that
   * where the other stores apply or fence such a write.
   */
  rowPerStateKey?: true;
}

export interface StoreUnderTest {
  name: string;
  store: StateStore;
  sink: TestSink;
  requests?: RequestCounter;
  /** Deletes a state item, as TTL would. */
  forget(key: string): Promise<void>;
  /**
   * The next `count` requests land, but their responses are lost: the SDK retries them (DynamoDB), or the store
   * call throws a retryable StoreError after applying (memory: the guard retries).
   */
  loseResponses(count: number): void;
  /** The state item as stored, for size checks: its attribute names and its size in bytes. */
  rawItem(key: string): Promise<{ attributes: string[]; bytes: number } | undefined>;
  close(): Promise<void>;
}

export type StoreFactory = { name: StoreName; make(): Promise<StoreUnderTest> };

/** Every store the contract suite runs against. Add a new engine here and it runs the whole suite. */
export const ALL_STORES: StoreFactory[] = [
  {
    name: "dynamodb",
    async make() {
      const client = localDynamoDB();
      const suffix = randomUUID().slice(0, 8);
      const tableName = `state-${suffix}`;
      const sinkTable = `sink-${suffix}`;
      await createStateTable(client, { tableName });
      await createTableIfMissing(client, sinkTable, "pk");
      const requests = countRequests(client);
      const lost = loseResponses(client);
      const sink = new DynamoDBFencedSink({ client, tableName: sinkTable });
      return {
        name: "dynamodb",
        store: new DynamoDBStore({ client, tableName }),
        requests,
        sink: {
          atomic: (ctx, key, value) => sink.atomicPut(ctx, { pk: key, value }),
          put: (ctx, key, value) => sink.put(ctx, { pk: key, value }),
          rowFor: (stateKey) => `row-${stateKey}`,
          read: async (key) => {
            const row = await sink.get(key);
            return row
              ? { value: String(row.value), srcPos: String(row.srcPos), srcFence: Number(row.srcFence) }
              : undefined;
          },
        },
        forget: async (key) => {
          await client.send(new DeleteItemCommand({ TableName: tableName, Key: { pk: { S: key } } }));
        },
        loseResponses: (count) => lost.lose(count),
        rawItem: async (key) => {
          const out = await client.send(
            new GetItemCommand({ TableName: tableName, Key: { pk: { S: key } }, ConsistentRead: true }),
          );
          if (!out.Item) return undefined;
          return { attributes: Object.keys(out.Item).sort(), bytes: dynamoItemBytes(out.Item) };
        },
        close: async () => client.destroy(),
      };
    },
  },
  {
    name: "dynamodb-inline",
    async make() {
      const client = localDynamoDB();
      const tableName = `inline-${randomUUID().slice(0, 8)}`;
      await createTableIfMissing(client, tableName, "pk");
      const requests = countRequests(client);
      const lost = loseResponses(client);
      const store = new InlineDynamoDBStore({ client, tableName });
      // The sink hooks are row writes: the test's value with the writing claim's position and fence, as the fenced
      // sink stores them, so a read shows which claim's write landed. A test's row name is the state key's row
      // (`rowFor`), mapped back for the write (inline-rows.ts).
      const { rowFor, stateKeyOf } = inlineRows((k) => store.rowKeyOf(k));
      const attributes = (ctx: { position: string | undefined; fence: number }, value: string) => ({
        value,
        srcPos: ctx.position ?? "",
        srcFence: ctx.fence,
      });
      const rowOf = (row: string) =>
        client.send(
          new GetItemCommand({ TableName: tableName, Key: { pk: { S: row } }, ConsistentRead: true }),
        );
      return {
        name: "dynamodb-inline",
        store,
        requests,
        sink: {
          rowPerStateKey: true,
          rowFor,
          atomic: (ctx, row, value) => store.row({ stateKey: stateKeyOf(row) }, attributes(ctx, value)),
          put: (ctx, row, value) =>
            store.putRow({ stateKey: stateKeyOf(row), fence: ctx.fence }, attributes(ctx, value)),
          read: async (row) => {
            const item = (await rowOf(row)).Item;
            // The row also holds the state: no user value means no row write landed.
            if (item?.value?.S === undefined) return undefined;
            return { value: item.value.S, srcPos: item.srcPos?.S ?? "", srcFence: Number(item.srcFence?.N) };
          },
        },
        forget: async (key) => {
          await client.send(
            new DeleteItemCommand({ TableName: tableName, Key: { pk: { S: store.rowKeyOf(key) } } }),
          );
        },
        loseResponses: (count) => lost.lose(count),
        rawItem: async (key) => {
          const out = await rowOf(store.rowKeyOf(key));
          if (!out.Item) return undefined;
          return { attributes: Object.keys(out.Item).sort(), bytes: dynamoItemBytes(out.Item) };
        },
        close: async () => client.destroy(),
      };
    },
  },
  {
    name: "memory",
    async make() {
      const rows = new Map<string, { value: string; srcPos: string; srcFence: number }>();
      const memory = new MemoryStore();
      const fencedPut = (
        ctx: { position: string | undefined; fence: number },
        key: string,
        value: string,
      ) => {
        const pos = ctx.position ?? "";
        const old = rows.get(key);
        if (old && (old.srcPos > pos || (old.srcPos === pos && old.srcFence >= ctx.fence))) return false;
        rows.set(key, { value, srcPos: pos, srcFence: ctx.fence });
        return true;
      };
      const { store, lose } = losingResponses(memory);
      return {
        name: "memory",
        store,
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
            apply: () => fencedPut(ctx, key, value),
          }),
          put: async (ctx, key, value) => (fencedPut(ctx, key, value) ? "applied" : "stale"),
          read: async (key) => rows.get(key),
          rowFor: (stateKey) => `row-${stateKey}`,
        },
        close: async () => {},
      };
    },
  },
  { name: "postgres", make: postgresStoreUnderTest },
  { name: "postgres-inline", make: postgresInlineStoreUnderTest },
  {
    name: "sqlite",
    async make() {
      // A database file per suite (WAL, as in use), removed after. `normal`: no fsync per step, which would block
      // the event loop (the driver is synchronous) and upset the guard suites' timing on a loaded machine.
      const dir = mkdtempSync(join(tmpdir(), "eonce-sqlite-"));
      const filename = join(dir, "state.db");
      const sqlite = new SqliteStore({ filename, synchronous: "normal" });
      const sink = new SqliteFencedSink({ store: sqlite, tableName: "sink" });
      // A second connection to the same file: what the harness does to rows, another process could do.
      const raw = new Database(filename);
      const { store, lose } = losingResponses(sqlite);
      return {
        name: "sqlite",
        store,
        sink: {
          atomic: (ctx, key, value) => sink.atomicPut(ctx, { key, value }),
          put: (ctx, key, value) => sink.put(ctx, { key, value }),
          read: async (key) => {
            const row = await sink.get(key);
            return row ? { value: String(row.value), srcPos: row.srcPos, srcFence: row.srcFence } : undefined;
          },
          rowFor: (stateKey) => `row-${stateKey}`,
        },
        forget: async (key) => {
          raw.prepare("DELETE FROM eonce_state WHERE state_key = ?").run(key);
        },
        loseResponses: lose,
        rawItem: async (key) => {
          const row = raw.prepare("SELECT * FROM eonce_state WHERE state_key = ?").get(key) as
            | Record<string, unknown>
            | undefined;
          if (!row) return undefined;
          const present = Object.entries(row).filter(([, v]) => v !== null);
          const bytes = present.reduce((n, [, v]) => n + Buffer.byteLength(String(v)), 0);
          return { attributes: present.map(([k]) => k).sort(), bytes };
        },
        close: async () => {
          raw.close();
          sqlite.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  { name: "valkey", make: valkeyStoreUnderTest },
];

/**
 * `store` with lost responses on demand: the next `count` steps land, then the caller sees a retryable StoreError,
 * as when a response is lost (the guard retries). For stores without an SDK retry loop to inject into.
 */
function losingResponses<S extends StateStore>(inner: S): { store: S; lose(count: number): void } {
  let toLose = 0;
  const store = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (
        typeof value !== "function" ||
        !["claim", "claimAndCommit", "renew", "commit", "release"].includes(String(prop))
      )
        return typeof value === "function" ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        const out = await value.apply(target, args);
        if (toLose > 0) {
          toLose--;
          throw new StoreError(`${String(prop)}: response lost (injected)`);
        }
        return out;
      };
    },
  });
  return {
    store,
    lose(count) {
      toLose += count;
    },
  };
}

/**
 * The engines this run tests: `EONCE_STORES=memory,dynamodb` (default: all), intersected with the engines the
 * vitest project allows (`EONCE_PROJECT_STORES`, set in vitest.config.ts: the unit project has no DynamoDB Local).
 */
export const STORES: StoreFactory[] = selectStores(
  process.env.EONCE_STORES,
  process.env.EONCE_PROJECT_STORES,
);

export function selectStores(wanted: string | undefined, allowed: string | undefined): StoreFactory[] {
  const names = selectStoreNames(wanted, allowed);
  // An engine of the registry (src/engines/registry.ts) without a factory here would silently skip every suite.
  for (const name of names)
    if (!ALL_STORES.some((s) => s.name === name))
      throw new Error(
        `engine ${name} (src/engines/registry.ts) has no factory in test/kit/stores.ts ALL_STORES`,
      );
  return ALL_STORES.filter((s) => names.includes(s.name));
}

/**
 * The store `factory` makes, for the enclosing suite: made before its tests, closed after. Read its fields inside
 * tests and hooks (before the suite's beforeAll there is no store yet).
 */
export function useStore(factory: StoreFactory): StoreUnderTest {
  let made: StoreUnderTest | undefined;
  beforeAll(async () => {
    made = await factory.make();
  });
  afterAll(async () => made?.close());
  return new Proxy({} as StoreUnderTest, {
    get(_, prop) {
      if (!made)
        throw new Error(`useStore(${factory.name}): read ${String(prop)} before the suite's beforeAll`);
      return Reflect.get(made, prop);
    },
  });
}

/**
 * Loses responses at the SDK's deserialize step, inside its retry loop: the request lands, the client sees a
 * timeout, and the SDK sends it again (the guard never knows). What a dropped connection does on AWS.
 */
export function loseResponses(client: DynamoDBClient): { lose(count: number): void } {
  let toLose = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      if (toLose > 0) {
        toLose--;
        throw Object.assign(new Error("response lost (injected)"), { name: "TimeoutError", $metadata: {} });
      }
      return out;
    },
    { step: "deserialize", name: "eonceLoseResponses", priority: "low" },
  );
  return {
    lose(count) {
      toLose += count;
    },
  };
}

/** A store whose chosen operations are replaced, the rest delegated (the contract's methods only). */
export function wrapStore(store: StateStore, overrides: Partial<StateStore>): StateStore {
  return {
    get engine() {
      return store.engine;
    },
    get maxResultBytes() {
      return store.maxResultBytes;
    },
    claim: (r) => store.claim(r),
    claimAndCommit: (r) => store.claimAndCommit(r),
    renew: (r) => store.renew(r),
    commit: (r) => store.commit(r),
    release: (r) => store.release(r),
    read: (k) => store.read(k),
    canFold: (w) => store.canFold(w),
    ...overrides,
  };
}
