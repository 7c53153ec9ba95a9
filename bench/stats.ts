/** Nearest-rank percentile of unsorted samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(samples: readonly number[]): Spread {
  return { median: median(samples), min: Math.min(...samples), max: Math.max(...samples) };
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
