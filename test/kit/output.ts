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

/**
 * Captures what Powertools prints (its own Console writes to process.stdout/stderr directly) until the current test
 * finishes (or `restore()`).
 */
export function captureOutput(): Captured {
  let text = "";
  const grab = (chunk: unknown) => {
    text += typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    return true;
  };
  const out = vi.spyOn(process.stdout, "write").mockImplementation(grab as typeof process.stdout.write);
  const err = vi.spyOn(process.stderr, "write").mockImplementation(grab as typeof process.stderr.write);
  const restore = () => {
    out.mockRestore();
    err.mockRestore();
  };
  onTestFinished(restore);
  const lines = () =>
    text
      .split("\n")
      .filter((l) => l.trim().startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
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
