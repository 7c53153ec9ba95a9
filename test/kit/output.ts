import { onTestFinished, vi } from "vitest";

export interface Captured {
  /** Every JSON line written, logs and EMF. */
  lines(): Record<string, unknown>[];
  /** Log lines (Powertools Logger): everything that is not EMF. */
  logs(): Record<string, unknown>[];
  /** Metric sums across all EMF lines: name → total (value arrays are summed). */
  metrics(): Record<string, number>;
  /** Raw values of one metric across EMF lines. */
  values(name: string): number[];
  emf(): Record<string, unknown>[];
  clear(): void;
  restore(): void;
}

/** The captures running now: one spy on stdout and stderr feeds them all (tests side by side each hold one). */
const capturing = new Set<(text: string) => void>();
let spies: { restore(): void } | undefined;

function listen(grab: (text: string) => void): () => void {
  capturing.add(grab);
  // vi.restoreAllMocks() elsewhere may have taken the spies off: then they are put back.
  if (!spies || !vi.isMockFunction(process.stdout.write)) {
    const write = (chunk: unknown) => {
      const text = typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
      for (const g of capturing) g(text);
      return true;
    };
    const out = vi.spyOn(process.stdout, "write").mockImplementation(write as typeof process.stdout.write);
    const err = vi.spyOn(process.stderr, "write").mockImplementation(write as typeof process.stderr.write);
    spies = {
      restore: () => {
        out.mockRestore();
        err.mockRestore();
      },
    };
  }
  return () => {
    capturing.delete(grab);
    if (capturing.size === 0) {
      spies?.restore();
      spies = undefined;
    }
  };
}

/**
 * Captures what Powertools prints (its own Console writes to process.stdout/stderr directly) until the current test
 * finishes (or `restore()`). Tests that capture side by side (`it.concurrent`) each see everything printed: each
 * names its handler's `pipeline` here, and keeps the lines of that pipeline only (logs and EMF both carry it).
 */
export function captureOutput(only: { pipeline?: string } = {}): Captured {
  let text = "";
  const restore = listen((chunk) => {
    text += chunk;
  });
  onTestFinished(restore);
  const lines = () =>
    text
      .split("\n")
      .filter((l) => l.trim().startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => only.pipeline === undefined || l.pipeline === only.pipeline);
  const emf = () => lines().filter((l) => "_aws" in l);
  const values = (name: string) =>
    emf().flatMap((l) => {
      const v = l[name];
      return v === undefined ? [] : Array.isArray(v) ? (v as number[]) : [v as number];
    });
  return {
    lines,
    logs: () => lines().filter((l) => !("_aws" in l)),
    emf,
    values,
    metrics: () => {
      const sums: Record<string, number> = {};
      for (const l of emf()) {
        const aws = l._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] };
        for (const { Name } of aws.CloudWatchMetrics[0]?.Metrics ?? []) {
          const v = l[Name];
          const add = Array.isArray(v) ? (v as number[]).reduce((a, b) => a + b, 0) : Number(v);
          sums[Name] = (sums[Name] ?? 0) + add;
        }
      }
      return sums;
    },
    clear: () => {
      text = "";
    },
    restore,
  };
}

/** The `message` of every log line captured. */
export function messages(captured: Captured): string[] {
  return captured.logs().map((l) => String(l.message));
}
