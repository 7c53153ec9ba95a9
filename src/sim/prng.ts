/**
 * A small seedable PRNG (sfc32, seeded through splitmix32) for fault injection: the same `--seed` gives the same fault
 * decisions for the same sequence of questions. Timing still varies between runs (servers, the event
 * loop), so runs with one seed are alike, not identical.
 */
export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** True with probability `p`. Always draws once, so a rate of 0 does not shift later decisions. */
  chance(p: number): boolean;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  /** One of `xs` (not empty), uniformly: one draw, as `int(0, xs.length - 1)`. */
  pick<T>(xs: readonly T[]): T;
  /** An independent generator for one purpose (e.g. per bucket or per queue), derived from this seed and `label`. */
  fork(label: string): Prng;
  readonly seed: number;
}

/** A generator seeded with `seed` (a safe integer). */
export function createPrng(seed: number): Prng {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
  // splitmix32 spreads the seed over sfc32's 128-bit state (nearby seeds give unrelated streams).
  let x = seed >>> 0;
  const splitmix = () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix();
  let b = splitmix();
  let c = splitmix();
  let d = splitmix();
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  // Discard a few outputs: the first ones still echo the seed.
  for (let i = 0; i < 12; i++) next();
  return {
    seed,
    next,
    chance: (p) => next() < p,
    int,
    pick: (xs) => xs[int(0, xs.length - 1)] as (typeof xs)[number],
    fork: (label) => createPrng((seed ^ hash32(label)) >>> 0),
  };
}

/** FNV-1a (32 bits): spreads labels over seeds, and keys over shards and lanes (stable across runs). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
