import type { Metafile } from "esbuild";

/** The bundles the cold-start bench builds and what it measures of each (bench/cold-start.ts). */
export const ENTRIES = {
  ours: "bench/cold-start/ours-s3.ts",
  powertools: "bench/cold-start/powertools-s3.ts",
  // The comparison of the target: Powertools idempotency with Logger and Metrics, which ours always has.
  "powertools + Logger + Metrics": "bench/cold-start/powertools-observed-s3.ts",
  "sdk only": "bench/cold-start/sdk-only.ts",
  // What if the wrapper did not load Powertools Logger and Metrics: the same entry with both replaced by empty
  // stubs. It evaluates but could not run (never invoked here): it measures what those two packages cost.
  "what-if: ours without Logger/Metrics": "bench/cold-start/ours-s3.ts",
} as const;
export type Entry = keyof typeof ENTRIES;

export interface Bundle {
  name: Entry;
  file: string;
  bytes: number;
  metafile: Metafile;
}

export interface ColdStartResult {
  name: Entry;
  bytes: number;
  /** Import of the bundle in a fresh process, ms: median (min–max) of the runs. */
  importMs: { median: number; min: number; max: number };
  /** CPU the import used (user + system), ms: less moved by a loaded machine than the wall time. */
  importCpuMs: { median: number; min: number; max: number };
  samples: number[];
}
