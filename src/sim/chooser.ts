import { createPrng, type Prng } from "./prng.js";

/**
 * Every nondeterministic decision of a history goes through a Chooser, so a history is a function of its choices:
 * seeded at random (`randomChooser`), or enumerated depth-first (`DfsChooser`) for the exhaustive runs.
 */
export interface Chooser {
  /** An index in [0, n): a branch point when n > 1. */
  choose(n: number, label: string): number;
  /** True with probability p (random mode); never a branch in exhaustive mode, where it is always false. */
  chance(p: number): boolean;
  /** Uniform integer in [min, max] (random mode); `min` in exhaustive mode (durations are not enumerated). */
  int(min: number, max: number): number;
  /** Uniform in [0, 1) for the guard's back-off jitter; a constant in exhaustive mode. */
  random(): number;
}

/** A seeded chooser; `digest()` fingerprints the decisions taken, to count distinct histories. */
export function randomChooser(seed: number): Chooser & { prng: Prng; digest(): string } {
  const prng = createPrng(seed);
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  const mix = (v: number) => {
    h1 = Math.imul(h1 ^ v, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ (v + 0x9e3779b9), 0x85ebca6b) >>> 0;
    return v;
  };
  return {
    prng,
    choose: (n) => mix(n <= 1 ? 0 : prng.int(0, n - 1)),
    chance: (p) => mix(prng.chance(p) ? 1 : 0) === 1,
    int: (min, max) => mix(prng.int(min, max)),
    random: () => prng.next(),
    digest: () => `${h1.toString(36)}.${h2.toString(36)}`,
  };
}

/**
 * Follows a prefix of choices, then takes branch 0 at every new branch point and records it. `next()` gives the
 * prefix of the next unexplored history (the last branch point with an untried branch, advanced), or undefined when
 * the tree is exhausted: plain DFS by replay from the start.
 */
export class DfsChooser implements Chooser {
  readonly made: { n: number; c: number; label: string }[] = [];
  constructor(readonly prefix: readonly number[] = []) {}

  choose(n: number, label: string): number {
    if (n <= 1) return 0;
    const i = this.made.length;
    const c = i < this.prefix.length ? (this.prefix[i] as number) : 0;
    if (c >= n) throw new Error(`DFS replay diverged at choice ${i} (${label}): ${c} of ${n}`);
    this.made.push({ n, c, label });
    return c;
  }
  chance(): boolean {
    return false;
  }
  int(min: number): number {
    return min;
  }
  random(): number {
    return 0.5;
  }

  next(): number[] | undefined {
    const path = this.made.map((m) => m.c);
    for (let i = this.made.length - 1; i >= 0; i--) {
      const m = this.made[i] as { n: number; c: number };
      if (m.c + 1 < m.n) return [...path.slice(0, i), m.c + 1];
    }
    return undefined;
  }
}
