import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  LeaseUnconfirmedError,
  OptionsError,
  ResultSerializationError,
  StoreError,
  UnsupportedAtomicWriteError,
} from "../../src/core/errors.js";
import { type ApplyContext, createGuard, type GuardOptions } from "../../src/core/guard.js";
import { positionFromNumber } from "../../src/core/position.js";
import { stateKey } from "../../src/core/state-key.js";
import type { StateStore } from "../../src/core/store.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import {
  deferred,
  guardEvent,
  millisecondApartClock,
  STORES,
  type StoreFactory,
  sleep,
  useStore,
  wrapStore,
} from "../kit/index.js";

const p = positionFromNumber;
const ev = guardEvent;

function shuffle<T>(items: T[], seed: number): T[] {
  const a = [...items];
  let s = seed;
  for (let i = a.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}

describe.each(STORES)("guard on $name", (factory) => {
  const t = useStore(factory);
  const guard = (o: Partial<GuardOptions> = {}) => createGuard({ store: t.store, leaseMs: 5000, ...o });
  const subject = () => `bucket/${randomUUID()}`;

  it("processes a new event once and replays its result to a duplicate", async () => {
    const g = guard();
    const s = subject();
    let runs = 0;
    const handler = async (ctx: {
      fence: number;
      attempt: number;
      position?: string;
      signal: AbortSignal;
    }) => {
      runs++;
      expect(ctx).toMatchObject({ fence: expect.any(Number), attempt: 1, position: p(7) });
      expect(ctx.signal.aborted).toBe(false);
      return { thumbnail: "t-7" };
    };
    const first = await g.run(ev(s, 7), handler);
    expect(first).toMatchObject({ status: "processed", result: { thumbnail: "t-7" }, attempt: 1 });
    const second = await g.run(ev(s, 7), handler);
    expect(second).toEqual({ status: "duplicate", result: { thumbnail: "t-7" } });
    expect(runs).toBe(1);
  });

  it("skips an older event as stale once a newer one is committed", async () => {
    const g = guard();
    const s = subject();
    await g.run(ev(s, 9), async () => "nine");
    let ran = false;
    const out = await g.run(ev(s, 4), async () => {
      ran = true;
    });
    expect(out).toEqual({ status: "stale", position: p(4), current: p(9) });
    expect(ran).toBe(false);
  });

  it.each([
    ["an Error", new Error("boom")],
    ["a retryable StoreError of the handler's own store", new StoreError("own read", { retryable: true })],
  ])(
    "releases the claim when the handler throws %s, so the redelivery processes it (attempt 2)",
    async (_, boom) => {
      const g = guard();
      const s = subject();
      let ran = 0;
      const failed = await g.run(ev(s, 1), async () => {
        ran++;
        throw boom;
      });
      expect(ran).toBe(1); // the handler's error is not the guard's to retry
      expect(failed).toEqual({ status: "failed", error: boom, released: true });
      const firstFence = (await t.store.read(stateKey(s, `${p(1)}:created`, true)))?.fence ?? 0;
      const retry = await g.run(ev(s, 1), async (ctx) => `attempt ${ctx.attempt}`);
      expect(retry).toMatchObject({ status: "processed", result: "attempt 2", attempt: 2 });
      expect(retry.status === "processed" && retry.fence).toBeGreaterThan(firstFence);
    },
  );

  it("a crashed holder blocks its subject only until its lease expires", async () => {
    const s = subject();
    const key = stateKey(s, `${p(1)}:created`, true);
    const now = Date.now();
    // A run that claimed and died: no commit, no release, no heartbeat.
    const crashed = await t.store.claim({
      key,
      position: p(1),
      identity: `${p(1)}:created`,
      nowMs: now,
      leaseUntilMs: now + 300,
      expiresAtSeconds: Math.ceil(now / 1000) + 60,
      supersede: false,
      fence: now * 1000,
      token: "crashed",
      leaseGraceMs: 0,
    });
    expect(crashed.claimed).toBe(true);
    const retryPolicy = await guard({ inFlight: "retry" }).run(ev(s, 1), async () => "x");
    expect(retryPolicy).toEqual({ status: "in-flight" });
    const started = Date.now();
    const waited = await guard({ inFlight: "wait" }).run(ev(s, 1), async () => "recovered", {
      deadlineMs: Date.now() + 3000,
    });
    expect(waited).toMatchObject({
      status: "processed",
      result: "recovered",
      tookOver: true,
      attempt: 2,
    });
    expect(waited.status === "processed" && waited.fence).toBeGreaterThan(now * 1000);
    expect(Date.now() - started).toBeLessThan(2000);
    // Not before the lease and its clock-skew grace (leaseMs / 10 here) ended.
    expect(Date.now()).toBeGreaterThanOrEqual(now + 300 + 500);
  });

  it("a zombie (frozen past its lease) is aborted at its lease end; its fenced write and commit are refused", async () => {
    const s = subject();
    const row = t.sink.rowFor(stateKey(s, "", true));
    // The zombie's heartbeats are delayed as if its process were frozen.
    const frozen: StateStore = Object.create(t.store);
    frozen.renew = async (req) => {
      await sleep(700);
      return t.store.renew(req);
    };
    frozen.claim = (r) => t.store.claim(r);
    frozen.commit = (r) => t.store.commit(r);
    frozen.release = (r) => t.store.release(r);
    frozen.canFold = (w) => t.store.canFold(w);
    const zombieGuard = createGuard({ store: frozen, leaseMs: 300, heartbeatMs: 100 });
    let zombieFence = 0;
    const takeoverDone = deferred();
    let zombieSignal: AbortSignal | undefined;
    let zombieWrite: string | undefined;
    const zombie = zombieGuard.run(ev(s, 5), async (ctx) => {
      zombieSignal = ctx.signal;
      zombieFence = ctx.fence;
      await takeoverDone.promise;
      zombieWrite = (await t.store.commit({ key: "x", fence: 0, identity: "", expiresAtSeconds: 1 }))
        .committed
        ? "impossible"
        : "refused";
      return "zombie result";
    });
    await sleep(350);
    const takeover = await guard({ leaseMs: 5000 }).run(ev(s, 5), async (ctx) => {
      ctx.atCommit(t.sink.atomic(ctx, row, "taker"));
      return "taker result";
    });
    expect(takeover).toMatchObject({ status: "processed", attempt: 2, tookOver: true });
    const takerFence = takeover.status === "processed" ? takeover.fence : 0;
    expect(takerFence).toBeGreaterThan(zombieFence);
    // Its renewals hang, so nothing confirmed a new lease: it was aborted when the one it held ended.
    expect(zombieSignal?.aborted).toBe(true);
    expect(zombieSignal?.reason).toBeInstanceOf(LeaseUnconfirmedError);
    takeoverDone.resolve();
    const zombieOutcome = await zombie;
    expect(zombieOutcome).toMatchObject({ status: "lease-lost", reason: "expired" });
    expect(zombieWrite).toBe("refused");
    // A late fenced write from the zombie cannot overwrite the taker's.
    const late = await t.store.commit({
      key: stateKey(s, `${p(5)}:created`, true),
      fence: zombieFence,
      identity: `${p(5)}:created`,
      expiresAtSeconds: 1,
      writes: [t.sink.atomic({ position: p(5), fence: zombieFence }, row, "zombie")],
    });
    expect(late.committed).toBe(false);
    expect(await t.sink.read(row)).toMatchObject({ value: "taker", srcFence: takerFence });
  });

  it("supersede: a newer event takes over a live older run, whose commit is refused as superseded", async () => {
    const s = subject();
    const row = t.sink.rowFor(stateKey(s, "", true));
    const g = guard({ busy: "supersede" });
    const olderMayFinish = deferred();
    const olderStarted = deferred();
    const older = g.run(ev(s, 3), async (ctx) => {
      olderStarted.resolve();
      await olderMayFinish.promise;
      ctx.atCommit(t.sink.atomic(ctx, row, "cat"));
      return "cat";
    });
    await olderStarted.promise;
    const newer = await g.run(ev(s, 8), async (ctx) => {
      ctx.atCommit(t.sink.atomic(ctx, row, "dog"));
      return "dog";
    });
    expect(newer).toMatchObject({ status: "processed", superseded: p(3) });
    olderMayFinish.resolve();
    expect(await older).toMatchObject({ status: "lease-lost", reason: "superseded" });
    expect(await t.sink.read(row)).toMatchObject({ value: "dog", srcPos: p(8) });
  });

  it("busy: retry fails fast; wait gives up at the deadline; wait succeeds once the holder commits", async () => {
    const s = subject();
    const release = deferred();
    const holder = guard().run(ev(s, 1), async () => {
      await release.promise;
      return "one";
    });
    await sleep(50);
    expect(await guard({ busy: "retry" }).run(ev(s, 2), async () => "two")).toEqual({
      status: "busy",
      holder: p(1),
    });
    const t0 = Date.now();
    const gaveUp = await guard({ busy: "wait" }).run(ev(s, 2), async () => "two", {
      deadlineMs: Date.now() + 300,
    });
    expect(gaveUp).toEqual({ status: "busy", holder: p(1) });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect(Date.now() - t0).toBeLessThan(1500);
    const waiting = guard({ busy: "wait" }).run(ev(s, 2), async () => "two", {
      deadlineMs: Date.now() + 4000,
    });
    await sleep(100);
    release.resolve();
    expect(await holder).toMatchObject({ status: "processed" });
    expect(await waiting).toMatchObject({ status: "processed", result: "two" });
  });

  it.each(["wait", "supersede", "retry"] as const)(
    "200 shuffled positions from 16 workers (busy=%s): the committed position and the sink hold the maximum",
    async (busy) => {
      const s = subject();
      const row = t.sink.rowFor(stateKey(s, "", true));
      const g = guard({ busy, leaseMs: 10_000, waitIntervalMs: 5, maxWaitIntervalMs: 50 });
      const queue = shuffle(
        Array.from({ length: 200 }, (_, i) => i + 1),
        busy.length * 7919,
      );
      const statuses: Record<string, number> = {};
      async function worker() {
        for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
          const out = await g.run(
            ev(s, n),
            async (ctx) => {
              ctx.atCommit(t.sink.atomic(ctx, row, `v${n}`));
              return n;
            },
            { deadlineMs: Date.now() + 20_000 },
          );
          statuses[out.status] = (statuses[out.status] ?? 0) + 1;
          // `retry` hands a busy event back to the source: here, the end of the queue.
          if (out.status === "busy" || out.status === "in-flight") queue.push(n);
        }
      }
      await Promise.all(Array.from({ length: 16 }, worker));
      const state = await t.store.read(stateKey(s, `${p(200)}:created`, true));
      expect(state).toMatchObject({ status: "done", committedPosition: p(200) });
      expect(await t.sink.read(row)).toMatchObject({ value: "v200", srcPos: p(200) });
      expect(statuses.processed).toBeGreaterThanOrEqual(1);
      expect(Object.values(statuses).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(200);
    },
    60_000,
  );

  it("passes the outer abort signal to the handler", async () => {
    const outer = new AbortController();
    const out = await guard().run(
      ev(subject(), 1),
      async (ctx) => {
        setTimeout(() => outer.abort(new Error("lambda timeout near")), 20);
        await new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
        );
      },
      { signal: outer.signal },
    );
    expect(out).toMatchObject({ status: "failed", released: true });
    expect(out.status === "failed" && (out.error as Error).message).toBe("lambda timeout near");
  });

  it("apply: one request claims, writes and commits; duplicates and stale events are refused", async () => {
    const g = guard();
    const s = subject();
    const row = t.sink.rowFor(stateKey(s, "", true));
    let computed = 0;
    const compute = (n: number) => (ctx: ApplyContext) => {
      computed++;
      ctx.atCommit(t.sink.atomic(ctx, row, `v${n}`));
      return `r${n}`;
    };
    expect(await g.apply(ev(s, 4), compute(4))).toMatchObject({
      status: "processed",
      result: "r4",
      writes: [{ status: "applied" }],
    });
    expect(await g.apply(ev(s, 4), compute(4))).toEqual({ status: "duplicate", result: "r4" });
    expect(await g.apply(ev(s, 2), compute(2))).toEqual({ status: "stale", position: p(2), current: p(4) });
    expect(await t.sink.read(row)).toMatchObject({ value: "v4", srcPos: p(4) });
    expect(computed).toBe(3);
    const failing = await g.apply(ev(s, 9), () => {
      throw new Error("compute failed");
    });
    expect(failing).toMatchObject({ status: "failed", released: false });
    expect(await g.apply(ev(s, 9), compute(9))).toMatchObject({ status: "processed", result: "r9" });
  });

  it("apply: a compute that throws a retryable StoreError fails the call at once and claims nothing", async () => {
    const g = guard();
    const s = subject();
    const row = t.sink.rowFor(stateKey(s, "", true));
    let computed = 0;
    const transient = new StoreError("the user's own read timed out", { retryable: true });
    const out = await g.apply(ev(s, 3), (ctx) => {
      computed++;
      if (computed === 1) throw transient; // the compute's own store read, not the guard's
      ctx.atCommit(t.sink.atomic(ctx, row, "v3"));
      return "r3";
    });
    // Reported as it is: the error is the user's, and nothing was claimed nor committed (it used to be retried and
    // committed, yet reported failed: redelivered as a duplicate).
    const state = await t.store.read(stateKey(s, `${p(3)}:created`, true));
    expect({ out, committed: state?.status ?? "nothing" }).toEqual({
      out: { status: "failed", error: transient, released: false },
      committed: "nothing",
    });
    expect(computed).toBe(1);
    // The redelivery computes again and commits.
    expect(await g.apply(ev(s, 3), () => "r3")).toMatchObject({ status: "processed", result: "r3" });
  });

  it("apply: the guard's own retryable store error is retried, compute reruns, and the outcome is what landed", async () => {
    const s = subject();
    let tries = 0;
    const flaky = wrapStore(t.store, {
      claimAndCommit: (r) => {
        if (++tries === 1) return Promise.reject(new StoreError("injected: not sent", { retryable: true }));
        return t.store.claimAndCommit(r);
      },
    });
    const g = createGuard({ store: flaky, leaseMs: 5000, waitIntervalMs: 1 });
    const fences: number[] = [];
    const out = await g.apply(ev(s, 1), (ctx) => {
      fences.push(ctx.fence);
      return "r1";
    });
    expect(out).toMatchObject({ status: "processed", result: "r1" });
    expect(tries).toBe(2);
    expect(fences).toHaveLength(2);
    expect(await g.apply(ev(s, 1), () => "again")).toEqual({ status: "duplicate", result: "r1" });
  });

  it("apply: a compute that throws after a request of the same call went unanswered is unconfirmed, not failed", async () => {
    const s = subject();
    let tries = 0;
    const lossy = wrapStore(t.store, {
      claimAndCommit: async (r) => {
        const landed = await t.store.claimAndCommit(r);
        if (++tries === 1) throw new StoreError("injected: response lost", { retryable: true });
        return landed;
      },
    });
    const g = createGuard({ store: lossy, leaseMs: 5000, waitIntervalMs: 1 });
    const boom = new Error("compute failed on the retry");
    let computed = 0;
    const out = await g.apply(ev(s, 1), () => {
      if (++computed === 2) throw boom;
      return "r1";
    });
    // The first request landed: "failed" (nothing claimed) would be false. Not acknowledged; a redelivery is a duplicate.
    expect(out).toEqual({ status: "unconfirmed", phase: "claim", error: boom });
    expect(await g.apply(ev(s, 1), () => "again")).toEqual({ status: "duplicate", result: "r1" });
  });

  it.each(["wait", "supersede", "retry"] as const)(
    "apply: 200 shuffled positions from 16 workers (busy=%s) end on the maximum",
    async (busy) => {
      const s = subject();
      const row = t.sink.rowFor(stateKey(s, "", true));
      const g = guard({ busy, waitIntervalMs: 5, maxWaitIntervalMs: 50 });
      const queue = shuffle(
        Array.from({ length: 200 }, (_, i) => i + 1),
        busy.length * 104729,
      );
      async function worker() {
        for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
          const k = n;
          const out = await g.apply(ev(s, k), (ctx) => {
            ctx.atCommit(t.sink.atomic(ctx, row, `v${k}`));
            return k;
          });
          if (out.status === "busy" || out.status === "in-flight") queue.push(k);
        }
      }
      await Promise.all(Array.from({ length: 16 }, worker));
      expect(await t.store.read(stateKey(s, `${p(200)}:created`, true))).toMatchObject({
        status: "done",
        committedPosition: p(200),
      });
      expect(await t.sink.read(row)).toMatchObject({ value: "v200", srcPos: p(200) });
    },
    60_000,
  );

  it("an event without a position is deduplicated by identity only", async () => {
    const g = guard();
    const s = subject();
    const a = await g.run({ subject: s, identity: "tag-a" }, async () => "a");
    const b = await g.run({ subject: s, identity: "tag-b" }, async () => "b");
    const again = await g.run({ subject: s, identity: "tag-a" }, async () => "a2");
    expect([a.status, b.status, again]).toEqual([
      "processed",
      "processed",
      { status: "duplicate", result: "a" },
    ]);
  });

  it("payload fingerprint: the same identity with another payload is a conflict (run and apply), not a duplicate", async () => {
    const g = guard();
    for (const mode of ["run", "apply"] as const) {
      const s = subject();
      const go = (fingerprint: string | undefined, result: string) => {
        const event = { subject: s, identity: "order-1", ...(fingerprint ? { fingerprint } : {}) };
        return mode === "run" ? g.run(event, async () => result) : g.apply(event, () => result);
      };
      expect((await go("fp-1", "first")).status).toBe("processed");
      expect(await go("fp-1", "again")).toEqual({ status: "duplicate", result: "first" });
      expect(await go("fp-2", "other")).toEqual({
        status: "conflict",
        fingerprint: "fp-2",
        committedFingerprint: "fp-1",
      });
      // Without a fingerprint there is nothing to compare: a duplicate, as before.
      expect(await go(undefined, "none")).toEqual({ status: "duplicate", result: "first" });
      expect((await t.store.read(stateKey(s, "order-1", false)))?.committedFingerprint).toBe("fp-1");
    }
  });
});

describe.runIf(STORES.some((s) => s.name === "dynamodb"))(
  "guard on dynamodb: requests per outcome (SDK middleware count)",
  () => {
    const t = useStore(STORES.find((s) => s.name === "dynamodb") as StoreFactory);

    it("new = claim + commit = 2 (effect folded in), duplicate = 1, stale = 1, failed = 2", async () => {
      const requests = t.requests;
      if (!requests) throw new Error("no counter");
      const g = createGuard({ store: t.store, clock: millisecondApartClock() });
      const s = `bucket/${randomUUID()}`;
      const row = `row-${randomUUID()}`;
      requests.reset();
      await g.run(ev(s, 2), async (ctx) => {
        ctx.atCommit(t.sink.atomic(ctx, row, "v2"));
      });
      expect(requests.counts).toEqual({ UpdateItem: 1, TransactWriteItems: 1 });
      expect(await t.sink.read(row)).toMatchObject({ value: "v2" });
      requests.reset();
      await g.run(ev(s, 3), async () => {});
      expect(requests.counts).toEqual({ UpdateItem: 2 });
      requests.reset();
      expect((await g.run(ev(s, 3), async () => {})).status).toBe("duplicate");
      expect(requests.total()).toBe(1);
      requests.reset();
      expect((await g.run(ev(s, 1), async () => {})).status).toBe("stale");
      expect(requests.total()).toBe(1);
      requests.reset();
      await g.run(ev(s, 4), async () => {
        throw new Error("x");
      });
      expect(requests.counts).toEqual({ UpdateItem: 2 });
    });

    it("apply: new with a DynamoDB effect = 1 (TransactWriteItems), duplicate = 1, stale = 1", async () => {
      const requests = t.requests;
      if (!requests) throw new Error("no counter");
      const g = createGuard({ store: t.store, clock: millisecondApartClock() });
      const s = `bucket/${randomUUID()}`;
      const row = `row-${randomUUID()}`;
      const compute = (ctx: ApplyContext) => {
        ctx.atCommit(t.sink.atomic(ctx, row, "v"));
      };
      requests.reset();
      expect((await g.apply(ev(s, 5), compute)).status).toBe("processed");
      expect(requests.counts).toEqual({ TransactWriteItems: 1 });
      requests.reset();
      expect((await g.apply(ev(s, 5), compute)).status).toBe("duplicate");
      expect(requests.total()).toBe(1);
      requests.reset();
      expect((await g.apply(ev(s, 3), compute)).status).toBe("stale");
      expect(requests.total()).toBe(1);
      requests.reset();
      expect((await g.apply(ev(s, 6), () => "no effect")).status).toBe("processed");
      expect(requests.counts).toEqual({ UpdateItem: 1 });
    });
  },
);

describe("guard options", () => {
  it("rejects unknown keys, a heartbeat not below the lease, and unknown policies", () => {
    const store = new MemoryStore();
    expect(() => createGuard({ store, leaseMS: 10 } as never)).toThrow(OptionsError);
    expect(() => createGuard({ store, leaseMs: 1000, heartbeatMs: 1000 })).toThrow(/heartbeatMs/);
    expect(() => createGuard({ store, busy: "spin" as never })).toThrow(/busy/);
  });

  it("fails and releases a run whose result cannot be stored, so a retry can claim", async () => {
    const g = createGuard({ store: new MemoryStore() });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const out = await g.run({ subject: "s", identity: "i" }, async () => cyclic);
    expect(out.status === "failed" && out.error).toBeInstanceOf(ResultSerializationError);
    expect(out.status === "failed" && out.released).toBe(true);
    expect(await g.run({ subject: "s", identity: "i" }, async () => "ok")).toMatchObject({
      status: "processed",
      attempt: 2,
    });
  });

  it("refuses an atomic write the store cannot fold", async () => {
    const g = createGuard({ store: new MemoryStore() });
    const out = await g.run({ subject: "s", identity: "i" }, async (ctx) => {
      ctx.atCommit({ engine: "dynamodb", description: "x" });
    });
    expect(out.status === "failed" && out.error).toBeInstanceOf(UnsupportedAtomicWriteError);
  });
});
