import { randomUUID } from "node:crypto";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import type { CacheClient } from "@aws-lambda-powertools/idempotency/cache/types";
import type { Redis } from "ioredis";
import type { Clock } from "../../../src/core/clock.js";
import { createGuard, type GuardContext } from "../../../src/core/guard.js";
import { positionFromNumber } from "../../../src/core/position.js";
import { leaseExpired, type StateRecord } from "../../../src/core/state.js";
import { stateKey } from "../../../src/core/state-key.js";
import { valkeyHashTag } from "../../../src/engines/valkey/keys.js";
import { ValkeyFencedSink } from "../../../src/engines/valkey/sink.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { lambdaContext } from "../../kit/context.js";

/*
 * Powertools' CachePersistenceLayer (@aws-lambda-powertools/idempotency/cache, 2.35.0) on ioredis, and the
 * interleaving of its issue #5714 run against it and against ours. No vitest import: bench/valkey.ts runs these too.
 */

/** What Powertools' cache layer passes to `set` (CachePersistenceLayer.js: `{ EX, NX }` or `{ EX }`). */
interface SetOptions {
  EX?: number;
  NX?: boolean;
}

/**
 * Powertools' `CacheClient` (get, set, del, as node-redis and Valkey GLIDE name them) over an ioredis client.
 * `afterGet`: called once, after the next GET has its answer and before the caller sees it (a caller paused there).
 */
export function powertoolsCacheClient(
  redis: Redis,
  hooks: { afterGet?: () => Promise<void> } = {},
): CacheClient {
  return {
    async get(name) {
      const value = await redis.get(name);
      const pause = hooks.afterGet;
      hooks.afterGet = undefined;
      await pause?.();
      return value;
    },
    async set(name, value, options) {
      const o = (options ?? {}) as SetOptions;
      const args: (string | number)[] = [];
      if (o.EX !== undefined) args.push("EX", o.EX);
      if (o.NX) args.push("NX");
      return redis.call("SET", String(name), String(value), ...args) as Promise<string | null>;
    },
    del: (keys) => redis.del(...keys),
  };
}

/** A promise and what settles it, plus whether it was reached (a pause point). */
function gate() {
  let open = () => {};
  let reached = () => {};
  const opened = new Promise<void>((r) => {
    open = r;
  });
  const arrived = new Promise<void>((r) => {
    reached = r;
  });
  return { open, opened, reached, arrived };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a run of the #5714 interleaving did. */
export interface StaleSnapshotRun {
  /** The record as caller A read it (its snapshot): in progress, its deadline past, so A takes it for an orphan. */
  snapshot: string;
  /** How each delivery ended: C (the slow first caller), A (acting on its snapshot), then one more redelivery. */
  outcomes: { c: string; a: string; again: string };
  /** How many times the handler ran, and the effect landed (a counter in Redis). */
  handlerRuns: number;
  effects: number;
  /** Powertools: the record A's handler saw while it ran (C's completed record had been overwritten). */
  recordDuringA?: string;
}

/** Powertools' in-progress deadline for the slow caller C, and how long past it caller A comes. */
const C_DEADLINE_MS = 150;
const PAST_MS = 250;

/**
 * Powertools #5714 against the real CachePersistenceLayer: C's in-progress record outlives its deadline while C
 * still runs. A (a redelivery on another instance) fails its SET NX, GETs the record (in progress, deadline past:
 * "orphaned") and pauses there; C completes (SET of the completed record); A goes on from its snapshot: it takes
 * the orphan lock (SET NX, which nobody held) and SETs its in-progress record over the completed one, unconditionally,
 * and runs the handler again.
 */
export async function powertoolsStaleSnapshot(redis: Redis, prefix: string): Promise<StaleSnapshotRun> {
  const counter = `${prefix}pt-effect:${randomUUID()}`;
  const payload = { id: randomUUID() };
  let handlerRuns = 0;
  let recordDuringA: string | undefined;
  let recordKey = "";
  const c = gate();
  const aPause = gate();
  // One Lambda instance each: its own persistence layer, config and client.
  const instance = (hooks: { afterGet?: () => Promise<void> }, timeoutMs: number) => {
    const config = new IdempotencyConfig({ eventKeyJmesPath: "id", throwOnNoIdempotencyKey: true });
    config.registerLambdaContext(lambdaContext({ functionName: "pt-5714", timeoutMs }));
    const persistenceStore = new CachePersistenceLayer({ client: powertoolsCacheClient(redis, hooks) });
    return makeIdempotent(
      async (_p: typeof payload, call: { ran: boolean; wait?: Promise<void>; during?: boolean }) => {
        call.ran = true;
        handlerRuns++;
        if (call.during) recordDuringA = (await redis.get(recordKey)) ?? "absent";
        await call.wait;
        await redis.incr(counter);
        return "done";
      },
      { persistenceStore, config, keyPrefix: `${prefix}pt`, dataIndexArgument: 0 },
    );
  };
  const outcome = (call: { ran: boolean }) => (call.ran ? "processed" : "duplicate");
  const callC = { ran: false, wait: c.opened };
  const runC = instance({}, C_DEADLINE_MS)(payload, callC);
  await sleep(C_DEADLINE_MS + PAST_MS);
  const callA = { ran: false, during: true };
  const pauseA = () => {
    aPause.reached();
    return c.opened;
  };
  const runA = instance({ afterGet: pauseA }, 30_000)(payload, callA);
  await aPause.arrived;
  recordKey = (await keysOf(redis, `${prefix}pt#*`)).find((k) => !k.endsWith(":lock")) ?? "";
  const snapshot = describePowertools(await redis.get(recordKey));
  c.open(); // C completes while A holds its snapshot; A goes on once C's SET returned
  await runC;
  await runA;
  const callAgain = { ran: false };
  await instance({}, 30_000)(payload, callAgain);
  return {
    snapshot,
    outcomes: { c: outcome(callC), a: outcome(callA), again: outcome(callAgain) },
    handlerRuns,
    effects: Number((await redis.get(counter)) ?? 0),
    recordDuringA: describePowertools(recordDuringA ?? null),
  };
}

function describePowertools(raw: string | null): string {
  if (raw === null || raw === "absent") return "absent";
  const item = JSON.parse(raw) as { status: string; in_progress_expiration?: number };
  const deadline = item.in_progress_expiration;
  if (item.status !== "INPROGRESS" || deadline === undefined) return item.status;
  return `INPROGRESS, deadline ${deadline <= Date.now() ? "past" : "ahead"}`;
}

async function keysOf(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== "0");
  return found;
}

/** A clock whose sleeps wait until their signal aborts: a frozen holder, whose heartbeats never go out. */
const frozenClock: Clock = {
  now: () => Date.now(),
  sleep: (_ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      signal?.addEventListener("abort", () => resolve(), { once: true });
    }),
};

/** Our lease for the slow caller C, and A's clock-skew grace. */
const C_LEASE_MS = 150;
const GRACE_MS = 50;

/**
 * The same interleaving against ours: C (`guard.run`, frozen: no heartbeat) holds the claim past its lease while
 * its handler runs; A reads the record (its snapshot: running, lease past, so A may take it over) and only then
 * sends its claim, after C committed with the effect folded in. A's claim is decided by the script on the record as
 * it is then: done, so A is a duplicate and its handler does not run.
 */
export async function oursStaleSnapshot(redis: Redis, prefix: string): Promise<StaleSnapshotRun> {
  const store = new ValkeyStore({ client: redis, keyPrefix: prefix });
  const sink = new ValkeyFencedSink({ store });
  const subject = `bucket/${randomUUID()}`;
  const key = stateKey(subject, "", true);
  const counter = `${prefix}effect:${valkeyHashTag(key)}`;
  const event = { subject, identity: `${positionFromNumber(1)}:created`, position: positionFromNumber(1) };
  let handlerRuns = 0;
  const c = gate();
  const handler = (wait?: Promise<void>) => async (ctx: GuardContext) => {
    handlerRuns++;
    await wait;
    ctx.atCommit(sink.increment(ctx, counter));
  };
  const slow = createGuard({ store, clock: frozenClock, leaseMs: C_LEASE_MS, clockSkewMs: GRACE_MS });
  const runC = slow.run(event, handler(c.opened));
  await sleep(C_LEASE_MS + GRACE_MS + PAST_MS);
  const a = createGuard({ store, leaseMs: 30_000, clockSkewMs: GRACE_MS });
  const snapshot = describeOurs(await store.read(key), Date.now());
  c.open();
  const outC = await runC;
  const outA = await a.run(event, handler());
  const again = await a.run(event, handler());
  return {
    snapshot,
    outcomes: { c: outC.status, a: outA.status, again: again.status },
    handlerRuns,
    effects: Number((await redis.get(counter)) ?? 0),
  };
}

/** The record as A's claim would judge it at `nowMs` (src/core/state.ts `leaseExpired`). */
function describeOurs(s: StateRecord | undefined, nowMs: number): string {
  if (!s) return "absent";
  if (s.status !== "running") return s.status;
  return `running, lease ${leaseExpired(s, { nowMs, leaseGraceMs: GRACE_MS }) ? "past" : "live"}`;
}
