import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll } from "vitest";
import { StoreError } from "../../src/core/errors.js";
import type { AtomicWrite, StateStore } from "../../src/core/store.js";
import { ENGINE_MODES, modeName } from "../../src/engines/registry.js";
import type { RequestCounter } from "../../src/observe/request-counter.js";
import type { Outbox, OutboxReader } from "../../src/outbox/types.js";
import { type StoreName, selectStoreNames } from "./store-names.js";
import "./test-engines.js";

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
  /**
   * The engine's outbox for this store (its entries fold into the store's commits) and a reader relays claim its
   * entries through; `reader()` makes another reader on its own connection (two relays racing). Every engine has
   * one: test/engines/outbox.test.ts fails an engine without it.
   */
  outbox?: { outbox: Outbox; reader(): Promise<OutboxReader> };
  close(): Promise<void>;
}

export type StoreFactory = { name: StoreName; make(): Promise<StoreUnderTest> };

/** A folder's factories: test/engines/<folder>/under-test.ts `storesUnderTest`, by engine name. */
type UnderTestModule = { storesUnderTest?: Record<string, () => Promise<StoreUnderTest>> };

/**
 * Every engine of the registry (src/engines/registry.ts, with the test suite's own: test-engines.ts) in each of its
 * modes (`ENGINE_MODES`: the inline ones too), each made by the `storesUnderTest` of its folder's
 * test/engines/<folder>/under-test.ts under its `modeName`, loaded when the suite needs it. A mode without one fails
 * every store suite at once.
 */
export const ALL_STORES: StoreFactory[] = ENGINE_MODES.map((e) => ({
  name: modeName(e),
  async make() {
    const module = (await import(`../engines/${e.folder}/under-test.ts`)) as UnderTestModule;
    const make = module.storesUnderTest?.[modeName(e)];
    if (!make)
      throw new Error(
        `engine ${modeName(e)} (src/engines/registry.ts) has no factory in test/engines/${e.folder}/under-test.ts storesUnderTest`,
      );
    return make();
  },
}));

/**
 * `store` with lost responses on demand: the next `count` steps land, then the caller sees a retryable StoreError,
 * as when a response is lost (the guard retries). For stores without an SDK retry loop to inject into.
 */
export function losingResponses<S extends StateStore>(inner: S): { store: S; lose(count: number): void } {
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
