import { randomUUID } from "node:crypto";
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { onAbort } from "../../src/core/abort.js";
import { createGuard } from "../../src/core/guard.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { guardEvent, sleep } from "../kit/index.js";

/**
 * A Lambda invocation passes one signal to the guard for every record of its batch: leases and back-off sleeps
 * must not add a listener each (Node warns past 10), and an abort must still reach every one of them.
 */

let warnings: string[] = [];
const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
beforeEach(() => {
  warnings = [];
  process.on("warning", onWarning);
});
afterEach(() => {
  process.off("warning", onWarning);
});

const abortListeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

describe("one signal shared by many guard runs", () => {
  for (const size of [10, 100]) {
    it(`${size} leases held at once on one signal: no MaxListenersExceededWarning, one listener, none after`, async () => {
      const shared = new AbortController();
      const guard = createGuard({ store: new MemoryStore(), leaseMs: 3_000, heartbeatMs: 10 });
      let started = 0;
      let allStarted!: () => void;
      const all = new Promise<void>((resolve) => {
        allStarted = resolve;
      });
      let listenersWhileHeld = -1;
      const runs = Array.from({ length: size }, (_, i) =>
        guard.run(
          guardEvent(`s/${randomUUID()}`, i),
          async () => {
            if (++started === size) {
              listenersWhileHeld = abortListeners(shared.signal);
              allStarted();
            }
            await all;
            await sleep(30); // a few heartbeats while every lease is held
          },
          { signal: shared.signal },
        ),
      );
      const outcomes = await Promise.all(runs);
      await sleep(10); // warnings are emitted on a later tick
      expect(outcomes.map((o) => o.status)).toEqual(Array(size).fill("processed"));
      expect(listenersWhileHeld).toBe(1);
      expect(abortListeners(shared.signal)).toBe(0);
      expect(warnings).toEqual([]);
    });
  }

  it("100 runs waiting for busy subjects sleep on one signal; aborting it reaches every lease and every waiter", async () => {
    const store = new MemoryStore();
    const shared = new AbortController();
    const guard = createGuard({ store, leaseMs: 3_000, waitIntervalMs: 5, maxWaitIntervalMs: 20 });
    const subjects = Array.from({ length: 100 }, () => `s/${randomUUID()}`);
    // 50 holders keep their subjects busy (their leases listen to the shared signal too).
    const held = subjects.slice(0, 50).map((s) =>
      guard.run(
        guardEvent(s, 1),
        (ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
          }),
        { signal: shared.signal },
      ),
    );
    await sleep(20);
    // 50 waiters for newer positions of the same subjects back off on the shared signal.
    const sawLiveSignal: boolean[] = [];
    const waiting = subjects.slice(0, 50).map((s) =>
      guard.run(
        guardEvent(s, 2),
        async (ctx) => {
          sawLiveSignal.push(!ctx.signal.aborted);
          if (ctx.signal.aborted) throw ctx.signal.reason;
        },
        { signal: shared.signal },
      ),
    );
    await sleep(100);
    expect(abortListeners(shared.signal)).toBe(1);
    const abortedAt = Date.now();
    shared.abort(new Error("the Lambda is about to time out"));
    const heldOutcomes = await Promise.all(held);
    await Promise.all(waiting);
    // Every holder's handler saw the abort through its lease; every waiter woke at once (the deadline is 3 s away),
    // and one that got the claim after all ran with its signal already aborted.
    expect(heldOutcomes.map((o) => o.status)).toEqual(Array(50).fill("failed"));
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    expect(sawLiveSignal.filter(Boolean)).toEqual([]);
    expect(abortListeners(shared.signal)).toBe(0);
    await sleep(10);
    expect(warnings).toEqual([]);
  });
});

describe("onAbort", () => {
  it("adds one listener however many subscribe, calls each once, and removes it when the last leaves", () => {
    const c = new AbortController();
    const calls: number[] = [];
    const offs = Array.from({ length: 50 }, (_, i) => onAbort(c.signal, () => calls.push(i)));
    expect(abortListeners(c.signal)).toBe(1);
    for (const off of offs.slice(0, 48)) off();
    expect(abortListeners(c.signal)).toBe(1);
    c.abort();
    expect(calls).toEqual([48, 49]);
    expect(abortListeners(c.signal)).toBe(0);
    for (const off of offs) off(); // unsubscribing after the abort is harmless

    const d = new AbortController();
    const off = onAbort(d.signal, () => calls.push(-1));
    off();
    expect(abortListeners(d.signal)).toBe(0);
    // A new subscription after the last one left adds the listener again.
    const again = onAbort(d.signal, () => calls.push(99));
    expect(abortListeners(d.signal)).toBe(1);
    d.abort();
    again();
    expect(calls).toEqual([48, 49, 99]);
    // Already aborted: nothing is subscribed (the caller checks `aborted`, as with addEventListener).
    expect(abortListeners(d.signal)).toBe(0);
    onAbort(d.signal, () => calls.push(-2))();
    expect(calls).toEqual([48, 49, 99]);
  });
});
