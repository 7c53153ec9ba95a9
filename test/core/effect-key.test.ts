import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EFFECT_KEY_PREFIX, type EffectKeyScope, effectKey } from "../../src/core/effect-key.js";
import { OptionsError } from "../../src/core/errors.js";
import { createGuard } from "../../src/core/guard.js";
import { isKeyText, MalformedKeyError } from "../../src/core/key-text.js";
import { positionFromNumber } from "../../src/core/position.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { deferred, wrapStore } from "../kit/index.js";

/** Fixed length, and only what a header value, a URL path segment and a file name all take. */
const KEY_SHAPE = /^eo1_[A-Za-z0-9_-]{40}$/;

/** Key text (src/core/key-text.ts), with the characters a naive join would confuse made likely. */
const text = fc
  .oneof(
    fc.string({ unit: "binary", maxLength: 12 }),
    fc.string({ unit: fc.constantFrom("a", "b", ":", "1", "#", "@", "é", "🙂"), maxLength: 6 }),
  )
  .filter(isKeyText);
const name = text.filter((s) => s.length > 0);
const scope: fc.Arbitrary<EffectKeyScope> = fc.oneof(
  fc.record({ kind: fc.constant("event" as const), subject: text, identity: text }),
  fc.record({ kind: fc.constant("step" as const), step: text }),
);

/** The inputs as one unambiguous string, to tell distinct inputs apart. */
const inputOf = (s: EffectKeyScope, n: string) => JSON.stringify([s, n]);

describe("effectKey", () => {
  it("is a pure function of the scope and name: same inputs (copies included), same key, of a fixed shape", () => {
    fc.assert(
      fc.property(scope, name, (s, n) => {
        const key = effectKey(s, n);
        expect(key).toMatch(KEY_SHAPE);
        expect(key.startsWith(EFFECT_KEY_PREFIX)).toBe(true);
        expect(effectKey(structuredClone(s), `${n}`)).toBe(key);
      }),
      { numRuns: 500 },
    );
  });

  it("gives distinct inputs distinct keys (splits of one text, an event and a step of the same text included)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(scope, name), {
          minLength: 2,
          maxLength: 40,
          selector: ([s, n]) => inputOf(s, n),
        }),
        (inputs) => {
          const keys = new Set(inputs.map(([s, n]) => effectKey(s, n)));
          expect(keys.size).toBe(inputs.length);
        },
      ),
      { numRuns: 300 },
    );
    const pairs: [EffectKeyScope, string][] = [
      [{ kind: "event", subject: "ab", identity: "c" }, "n"],
      [{ kind: "event", subject: "a", identity: "bc" }, "n"],
      [{ kind: "event", subject: "a", identity: "b" }, "cn"],
      [{ kind: "step", step: "abc" }, "n"],
      [{ kind: "step", step: "1:a1:b" }, "n"],
    ];
    expect(new Set(pairs.map(([s, n]) => effectKey(s, n))).size).toBe(pairs.length);
  });

  it("refuses a name that breaks the key rule (MalformedKeyError) or is empty (OptionsError)", () => {
    const event: EffectKeyScope = { kind: "event", subject: "s", identity: "i" };
    for (const bad of ["charge\uD800", "\uDC00charge", "char\0ge"]) {
      const error = (() => {
        try {
          effectKey(event, bad);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(MalformedKeyError);
      expect((error as MalformedKeyError).kind).toBe("effect name");
    }
    expect(() => effectKey(event, "")).toThrow(OptionsError);
    expect(() => effectKey({ kind: "event", subject: "s\uD800", identity: "i" }, "n")).toThrow(
      MalformedKeyError,
    );
  });
});

/** A provider that deduplicates by key: the first call of a key charges, a later one replays that charge. */
function fakePayments() {
  const byKey = new Map<string, string>();
  const charges: string[] = [];
  return {
    charges,
    charge(key: string): string {
      const known = byKey.get(key);
      if (known !== undefined) return known;
      const id = `ch_${charges.length + 1}`;
      charges.push(id);
      byKey.set(key, id);
      return id;
    },
  };
}

describe("ctx.effectKey through the guard", () => {
  const event = (subject: string, n: number) => ({
    subject,
    identity: `${positionFromNumber(n)}:created`,
    position: positionFromNumber(n),
  });

  it("run: a run that fails after the call and its retry (new fence, attempt 2) use one key: one charge", async () => {
    const guard = createGuard({ store: new MemoryStore(), leaseMs: 5_000 });
    const api = fakePayments();
    const seen: { key: string; fence: number; attempt: number }[] = [];
    const handler = async (ctx: { effectKey(n: string): string; fence: number; attempt: number }) => {
      const key = ctx.effectKey("charge");
      seen.push({ key, fence: ctx.fence, attempt: ctx.attempt });
      const id = api.charge(key);
      if (seen.length === 1) throw new Error("crashed after the charge, before the commit");
      return id;
    };
    const e = event("orders/1", 1);
    expect((await guard.run(e, handler)).status).toBe("failed");
    const retried = await guard.run(e, handler);
    expect(retried).toMatchObject({ status: "processed", result: "ch_1", attempt: 2 });
    const [first, second] = seen;
    expect(second?.attempt).toBe(2);
    expect(second?.fence).not.toBe(first?.fence);
    expect(second?.key).toBe(first?.key);
    expect(api.charges).toEqual(["ch_1"]);
    // Another event of the subject, and another name, get other keys.
    let other: string[] = [];
    await guard.run(event("orders/1", 2), async (ctx) => {
      other = [ctx.effectKey("charge"), ctx.effectKey("refund")];
    });
    expect(new Set([first?.key, ...other]).size).toBe(3);
    expect(first?.key).toBe(effectKey({ kind: "event", subject: e.subject, identity: e.identity }, "charge"));
  });

  it("run: a takeover of a frozen run (its renewals never land) uses the frozen run's key", async () => {
    const store = new MemoryStore();
    // The frozen process: its renewals hang, so its lease runs out while its handler is still inside the call.
    const frozen = wrapStore(store, { renew: () => new Promise(() => {}) });
    const api = fakePayments();
    const e = event("orders/3", 1);
    const thaw = deferred();
    const keys: string[] = [];
    const first = createGuard({ store: frozen, leaseMs: 200 }).run(e, async (ctx) => {
      keys.push(ctx.effectKey("charge"));
      api.charge(ctx.effectKey("charge"));
      await thaw.promise;
      return "late";
    });
    const second = await createGuard({ store, leaseMs: 200, inFlight: "wait" }).run(
      e,
      async (ctx) => {
        keys.push(ctx.effectKey("charge"));
        return api.charge(ctx.effectKey("charge"));
      },
      { deadlineMs: Date.now() + 5_000 },
    );
    expect(second).toMatchObject({ status: "processed", tookOver: true, attempt: 2, result: "ch_1" });
    thaw.resolve();
    expect((await first).status).toBe("lease-lost");
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(api.charges).toEqual(["ch_1"]);
  });

  it("apply: the compute's key is the event's, whatever the fence, and run and apply agree", async () => {
    const guard = createGuard({ store: new MemoryStore(), leaseMs: 5_000 });
    const api = fakePayments();
    const e = event("orders/2", 1);
    const keys: string[] = [];
    const fences: number[] = [];
    const compute = (ctx: { effectKey(n: string): string; fence: number }) => {
      keys.push(ctx.effectKey("charge"));
      fences.push(ctx.fence);
      const id = api.charge(ctx.effectKey("charge"));
      if (keys.length === 1) throw new Error("failed after the charge");
      return id;
    };
    expect((await guard.apply(e, compute)).status).toBe("failed");
    expect(await guard.apply(e, compute)).toMatchObject({ status: "processed", result: "ch_1" });
    expect(fences[1]).not.toBe(fences[0]);
    expect(keys[1]).toBe(keys[0]);
    expect(api.charges).toHaveLength(1);
    let viaRun = "";
    await createGuard({ store: new MemoryStore() }).run(e, async (ctx) => {
      viaRun = ctx.effectKey("charge");
    });
    expect(viaRun).toBe(keys[0]);
  });
});
