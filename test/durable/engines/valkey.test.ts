import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptionsError, StoreError, UnsupportedAtomicWriteError } from "../../../src/core/errors.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { stateKey } from "../../../src/core/state-key.js";
import {
  type DispatchedExecution,
  durableExecutionName,
  type StepEffectContext,
  ValkeyStepEffects,
} from "../../../src/durable/index.js";
import type { ValkeyAtomicWrite } from "../../../src/engines/valkey/atomic-write.js";
import { ReplicasNotReachedError } from "../../../src/engines/valkey/errors.js";
import { hashTagOf } from "../../../src/engines/valkey/keys.js";
import { LUA, LUA_BARRIER } from "../../../src/engines/valkey/lua.js";
import { countValkeyCommands } from "../../../src/engines/valkey/request-counter.js";
import { ValkeyFencedSink, valkeyWrite } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { claimOf, deleteKeys, losingClient, testClient, testPrefix } from "../../engines/valkey/harness.js";
import { quietLogger, quietMetrics } from "../harness.js";

/**
 * What the contract (contract.test.ts, valkey.ts) does not cover of ValkeyStepEffects: the slot rule, the fence move
 * folded by the store, the key layout and expiry, write outcomes inside a step, lost answers, waitForReplicas, and
 * the round trips. This machine's Redis, a key prefix per suite (SCAN and DEL after; never FLUSHALL).
 */
describe("ValkeyStepEffects", () => {
  let client: Redis;
  let prefix: string;
  let store: ValkeyStore;
  let sink: ValkeyFencedSink;
  let effects: ValkeyStepEffects;
  const quiet = { logger: quietLogger(), metrics: quietMetrics() };

  beforeAll(async () => {
    client = testClient();
    prefix = testPrefix();
    for (const lua of [LUA.step, LUA.stopStep, LUA.commit, LUA.claim]) await client.script("LOAD", lua);
    store = new ValkeyStore({ client, keyPrefix: prefix, minRetentionMs: 3_600_000 });
    sink = new ValkeyFencedSink({ store });
    effects = new ValkeyStepEffects({ client, keyPrefix: prefix, markerExpiresAfterSeconds: 3600, ...quiet });
  });
  afterAll(async () => {
    await deleteKeys(client, prefix);
    await client.quit();
  });

  const execution = (version: number, subject = `o#${randomUUID().slice(0, 12)}`): DispatchedExecution => ({
    executionName: durableExecutionName(subject, `v${version}`),
    subject,
    identity: `v${version}`,
    position: positionFromNumber(version),
  });
  const keyIn = (ctx: StepEffectContext, name: string) =>
    `${prefix}${name}:${effects.hashTag({ ...ctx, position: ctx.position ?? null })}`;
  const fenceKey = (e: DispatchedExecution) => (effects.fenceWrite(e) as ValkeyAtomicWrite).key;
  /** The keys of one role (keys.ts: `<prefix>{<tag>}<role>`). */
  const keysOf = async (role: "f" | "m") =>
    (await client.keys(`${prefix}{*}${role === "f" ? "f" : "m*"}`)).sort();

  it("refuses a write outside the subject's slot, or for another client, before anything is written", async () => {
    const e = execution(1);
    let inSlot = "";
    await expect(
      effects.commitStep(e, "misplaced", (ctx) => {
        inSlot = keyIn(ctx, "count");
        ctx.atCommit(valkeyWrite(store, "incr", inSlot, "1"));
        ctx.atCommit(sink.set(ctx, `${prefix}row:{another-subject}`, "x"));
      }),
    ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    const other = testClient();
    try {
      const foreign = new ValkeyStore({ client: other, keyPrefix: prefix });
      await expect(
        effects.commitStep(e, "misplaced", (ctx) => {
          ctx.atCommit(valkeyWrite(foreign, "incr", keyIn(ctx, "count"), "1"));
        }),
      ).rejects.toBeInstanceOf(UnsupportedAtomicWriteError);
    } finally {
      other.disconnect();
    }
    expect(await client.exists(inSlot)).toBe(0);
    expect(await effects.marker(e, "misplaced")).toEqual({ applied: false });
    expect(await client.exists(fenceKey(e))).toBe(0);
  });

  it("keeps the fence and the marker in the state key's slot, the marker expiring at markerExpiresAfterSeconds", async () => {
    const e = execution(1);
    await effects.commitStep(e, "resize", (ctx) =>
      ctx.atCommit(valkeyWrite(store, "set", keyIn(ctx, "row"), "v")),
    );
    const tag = hashTagOf(store.redisKeyOf(stateKey(e.subject, e.identity, true)));
    const fence = (await keysOf("f")).filter((k) => k.includes(e.subject));
    const marker = (await keysOf("m")).filter((k) => k.includes(e.executionName));
    expect(fence.map(hashTagOf)).toEqual([tag]);
    expect(marker.map(hashTagOf)).toEqual([tag]);
    expect(await client.hgetall(fence[0] as string)).toEqual({ pos: e.position, exec: e.executionName });
    expect(await client.ttl(fence[0] as string)).toBe(-1); // fences never expire
    const ttl = await client.ttl(marker[0] as string);
    expect(ttl).toBeGreaterThan(3590);
    expect(ttl).toBeLessThanOrEqual(3601);
  });

  it("the dispatcher's fence move folds into ValkeyStore's commit: stale over a newer execution, the commit lands", async () => {
    const newer = execution(2);
    const older = execution(1, newer.subject);
    expect(store.canFold(effects.fenceWrite(newer))).toBe(true);
    const elsewhere = testClient();
    try {
      expect(new ValkeyStore({ client: elsewhere }).canFold(effects.fenceWrite(newer))).toBe(false);
    } finally {
      elsewhere.disconnect();
    }
    const key = stateKey(newer.subject, newer.identity, true);
    const commitWith = async (e: DispatchedExecution, pos: number) => {
      const claim = claimOf(key, pos);
      await store.claim(claim);
      return store.commit({
        key,
        fence: claim.fence,
        identity: claim.identity,
        expiresAtSeconds: Math.ceil(Date.now() / 1000) + 3600,
        writes: [effects.fenceWrite(e)],
      });
    };
    expect(await commitWith(newer, 2)).toEqual({
      committed: true,
      writes: [{ description: `execution fence of ${newer.subject}`, status: "applied" }],
    });
    // The older execution's fence move, folded after the newer one's (the guard would not let it): stale.
    expect(await commitWith(older, 4)).toMatchObject({ committed: true, writes: [{ status: "stale" }] });
    expect((await effects.commitStep(older, "notify", () => 0)).status).toBe("stale");
  });

  it("reports a fenced write over newer work as stale, and the step still lands", async () => {
    const e = execution(1);
    let target = "";
    const first = await effects.commitStep(e, "index", (ctx) => {
      target = keyIn(ctx, "row");
      // A newer stamp on the target (another writer of the subject, a later position).
      ctx.atCommit(sink.set(ctx, target, "mine"));
      ctx.atCommit(valkeyWrite(store, "incr", keyIn(ctx, "count"), "1"));
    });
    expect(first.status).toBe("processed");
    await sink.put(sink.set({ position: positionFromNumber(9), fence: 1 }, target, "newer"));
    const second = await effects.commitStep(e, "index again", (ctx) => {
      ctx.atCommit(sink.set(ctx, target, "mine again"));
      ctx.atCommit(valkeyWrite(store, "incr", keyIn(ctx, "count"), "1"));
    });
    expect(second).toMatchObject({
      status: "processed",
      writes: [{ status: "stale" }, { status: "applied" }],
    });
    expect(await client.get(target)).toBe("newer");
  });

  it("a write the server cannot run refuses the whole step: nothing written, a non-retryable StoreError", async () => {
    const e = execution(1);
    const hash = `${prefix}hash:${effects.hashTag(e)}`;
    await client.hset(hash, "f", "v");
    let counter = "";
    const error = await effects
      .commitStep(e, "typed", (ctx) => {
        counter = keyIn(ctx, "count");
        ctx.atCommit(valkeyWrite(store, "incr", counter, "1"));
        ctx.atCommit(valkeyWrite(store, "incr", hash, "1")); // a hash: INCRBY would fail half-way
      })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(false);
    expect(await client.exists(counter)).toBe(0);
    expect(await effects.marker(e, "typed")).toEqual({ applied: false });
    expect(await client.exists(fenceKey(e))).toBe(0);
  });

  it("a landed step whose answer was lost: the retry finds the marker, the effect counts once", async () => {
    const lossy = testClient();
    try {
      const lost = losingClient(lossy);
      const lossyStore = new ValkeyStore({ client: lossy, keyPrefix: prefix });
      const lossyEffects = new ValkeyStepEffects({ client: lossy, keyPrefix: prefix, ...quiet });
      const e = execution(1);
      let counter = "";
      const step = () =>
        lossyEffects.commitStep(e, "charge", (ctx) => {
          counter = keyIn(ctx, "count");
          ctx.atCommit(valkeyWrite(lossyStore, "incr", counter, "1"));
          return "receipt";
        });
      lost.lose(1);
      await expect(step()).rejects.toMatchObject({ retryable: true });
      expect(await step()).toEqual({ status: "duplicate", result: "receipt" });
      expect(await client.get(counter)).toBe("1");
    } finally {
      lossy.disconnect();
    }
  });

  it("costs one EVALSHA per step, applied, duplicate or stale, and one per stop", async () => {
    const commands = countValkeyCommands(client);
    const newer = execution(2);
    const older = execution(1, newer.subject);
    const add = (ctx: StepEffectContext) =>
      ctx.atCommit(valkeyWrite(store, "incr", keyIn(ctx, "count"), "1"));
    const outcomes = [
      await effects.commitStep(newer, "a", add),
      await effects.commitStep(newer, "a", add),
      await effects.commitStep(older, "a", add),
    ];
    expect(outcomes.map((o) => o.status)).toEqual(["processed", "duplicate", "stale"]);
    expect(await effects.stop(newer)).toBe("stopped");
    expect(commands.counts).toEqual({ EVALSHA: 4 });
  });

  it("waitForReplicas: WAIT after each step's script; too few acknowledgements is a ReplicasNotReachedError", async () => {
    for (const lua of [LUA_BARRIER.step, LUA_BARRIER.stopStep]) await client.script("LOAD", lua);
    const info = await client.info("replication");
    const replicas = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0) + 1;
    const waiting = new ValkeyStepEffects({
      client,
      keyPrefix: prefix,
      waitForReplicas: { replicas, timeoutMs: 20 },
      ...quiet,
    });
    const commands = countValkeyCommands(client);
    const e = execution(1);
    const step = () =>
      waiting.commitStep(e, "replicated", (ctx) => ctx.atCommit(sink.set(ctx, keyIn(ctx, "row"), "v")));
    await expect(step()).rejects.toBeInstanceOf(ReplicasNotReachedError);
    expect(await waiting.marker(e, "replicated")).toEqual({ applied: true }); // landed on the primary
    // The refused retry (its marker is there) waits too: it rewrites the marker, unchanged, for its WAIT.
    await expect(step()).rejects.toBeInstanceOf(ReplicasNotReachedError);
    await expect(waiting.stop(execution(0, e.subject))).rejects.toBeInstanceOf(ReplicasNotReachedError);
    expect(commands.counts).toMatchObject({ EVALSHA: 3, WAIT: 3 });
  });

  it("validates its options: unknown keys, a bad key prefix, a client that is not one", () => {
    expect(() => new ValkeyStepEffects({ client, tableName: "x" } as never)).toThrow(OptionsError);
    expect(() => new ValkeyStepEffects({ client, keyPrefix: "a{b}" })).toThrow(OptionsError);
    expect(() => new ValkeyStepEffects({ client: {} as never })).toThrow(OptionsError);
    expect(() => new ValkeyStepEffects({ client, markerExpiresAfterSeconds: 0 })).toThrow(OptionsError);
    expect(new ValkeyStepEffects({ client }).keyPrefix).toBe("eonce:");
  });
});
