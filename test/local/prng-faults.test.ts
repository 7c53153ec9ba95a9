import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import { FaultInjector, resolveFaults } from "../../src/sim/live/faults.js";
import { createPrng } from "../../src/sim/prng.js";

describe("seedable PRNG", () => {
  it("repeats its stream for a seed and differs between seeds and forks", () => {
    const draw = (seed: number, label?: string) => {
      const p = label ? createPrng(seed).fork(label) : createPrng(seed);
      return Array.from({ length: 8 }, () => p.next());
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
    expect(draw(7, "a")).not.toEqual(draw(7, "b"));
    for (const v of draw(3)) expect(v >= 0 && v < 1).toBe(true);
  });

  it("hits a rate within a few percent over many draws, for several seeds", () => {
    for (const seed of [1, 2, 3, 42]) {
      const p = createPrng(seed);
      let hits = 0;
      for (let i = 0; i < 20_000; i++) if (p.chance(0.1)) hits++;
      expect(hits / 20_000).toBeGreaterThan(0.09);
      expect(hits / 20_000).toBeLessThan(0.11);
    }
  });

  it("has no visible correlation between consecutive draws (rates of pairs multiply)", () => {
    // The first generator tried (mulberry32 with xor-derived seeds) failed this for seed 1.
    for (const seed of [1, 2, 3]) {
      const p = createPrng(seed).fork("function:x").fork("run");
      let both = 0;
      for (let i = 0; i < 20_000; i++) if (p.chance(0.3) && p.chance(0.3)) both++;
      expect(both / 20_000).toBeGreaterThan(0.07);
      expect(both / 20_000).toBeLessThan(0.11);
    }
  });

  it("draws integers in the closed range", () => {
    const p = createPrng(5);
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) seen.add(p.int(2, 4));
    expect([...seen].sort()).toEqual([2, 3, 4]);
  });

  it("picks an element with the draw int(0, length - 1) makes, so seeded settings stay as they were", () => {
    const xs = ["a", "b", "c", "d", "e"] as const;
    const picked = createPrng(11);
    const counted = createPrng(11);
    for (let i = 0; i < 200; i++) expect(picked.pick(xs)).toBe(xs[counted.int(0, xs.length - 1)]);
  });
});

describe("fault injection", () => {
  it("rejects unknown keys, out-of-range rates and failure rates above 1 in total", () => {
    expect(() => resolveFaults({ duplicateRte: 0.1 } as never)).toThrow(OptionsError);
    expect(() => resolveFaults({ duplicateRate: 1.5 })).toThrow(OptionsError);
    expect(() => resolveFaults({ slowMs: -1 })).toThrow(OptionsError);
    // String() of these throws TypeError; the validator must still answer with an OptionsError.
    expect(() => resolveFaults({ duplicateRate: Object.create(null) })).toThrow(OptionsError);
    expect(() => resolveFaults({ slowMs: { toString: 1 } as never })).toThrow(OptionsError);
    expect(() => resolveFaults({ faultyAttempts: Object.create(null) })).toThrow(OptionsError);
    expect(() => resolveFaults({ failBeforeRate: 0.6, failAfterRate: 0.6 })).toThrow(OptionsError);
    expect(resolveFaults(undefined).duplicateRate).toBe(0);
  });

  it("sends duplicates at the rate and delays within the window", () => {
    const f = new FaultInjector({ duplicateRate: 0.25, reorderWindowMs: 300 }, createPrng(9));
    let copies = 0;
    for (let i = 0; i < 4000; i++) {
      const d = f.forDelivery();
      copies += d.delaysMs.length;
      for (const ms of d.delaysMs) expect(ms >= 0 && ms <= 300).toBe(true);
    }
    expect(copies / 4000).toBeGreaterThan(1.22);
    expect(copies / 4000).toBeLessThan(1.28);
  });

  it("gives each run at most one failure mode, and faults only to the first attempts", () => {
    const f = new FaultInjector(
      {
        failBeforeRate: 0.2,
        failAfterRate: 0.2,
        crashRate: 0.2,
        slowRate: 0.5,
        slowMs: 40,
        faultyAttempts: 1,
      },
      createPrng(4),
    );
    const counts = { failBefore: 0, failAfter: 0, crash: 0, slow: 0 };
    for (let i = 0; i < 5000; i++) {
      const r = f.forRun(1);
      expect(Number(r.failBefore) + Number(r.failAfter) + Number(r.crash)).toBeLessThanOrEqual(1);
      if (r.failBefore) counts.failBefore++;
      if (r.failAfter) counts.failAfter++;
      if (r.crash) counts.crash++;
      if (r.slowMs === 40) counts.slow++;
      const retry = f.forRun(2);
      expect(retry).toEqual({ failBefore: false, failAfter: false, crash: false, slowMs: 0 });
    }
    for (const n of [counts.failBefore, counts.failAfter, counts.crash]) {
      expect(n / 5000).toBeGreaterThan(0.17);
      expect(n / 5000).toBeLessThan(0.23);
    }
    expect(counts.slow / 5000).toBeGreaterThan(0.46);
  });
});
