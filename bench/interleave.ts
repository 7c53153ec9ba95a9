import type { BenchClient } from "./client.js";
import { percentile, round, type Spread, spread } from "./stats.js";

/** What one runner did over the measured calls (warm-up calls excluded). */
export interface Sampled {
  /** Wall time of each measured call, ms. */
  ms: number[];
  calls: number;
  requests: number;
  wcu: number;
  rcu: number;
  /** CPU of this process during the calls (the SDK client and the implementation: nothing else runs meanwhile). */
  cpuMs: number;
}

/**
 * Calls every runner once per round, one call at a time, rotating the order each round so that no runner always
 * follows another and drift in the machine's load hits all alike. With a bench client, the requests and capacity
 * of each call are counted (the counters are reset before each call: calls never overlap).
 */
export async function interleaved(
  runners: ReadonlyArray<(round: number) => Promise<unknown>>,
  o: { warmup: number; count: number; bc?: BenchClient; onTick?: () => void },
): Promise<Sampled[]> {
  const out: Sampled[] = runners.map(() => ({ ms: [], calls: 0, requests: 0, wcu: 0, rcu: 0, cpuMs: 0 }));
  for (let i = 0; i < o.warmup + o.count; i++) {
    for (let j = 0; j < runners.length; j++) {
      const k = (i + j) % runners.length;
      o.bc?.requests.reset();
      o.bc?.capacity.reset();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await runners[k]?.(i);
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const s = out[k];
      if (s && i >= o.warmup) {
        s.ms.push(ms);
        s.calls++;
        s.cpuMs += (cpu.user + cpu.system) / 1000;
        s.requests += o.bc?.requests.total() ?? 0;
        s.wcu += o.bc?.capacity.wcu ?? 0;
        s.rcu += o.bc?.capacity.rcu ?? 0;
      }
      o.onTick?.();
    }
  }
  return out;
}

/** Per-repetition figures collected into medians with their spread. */
export class RepSeries {
  private readonly values = new Map<string, number[]>();
  push(name: string, value: number): void {
    const list = this.values.get(name) ?? [];
    list.push(value);
    this.values.set(name, list);
  }
  spread(name: string, digits = 3): Spread {
    const s = spread(this.values.get(name) ?? [Number.NaN]);
    return { median: round(s.median, digits), min: round(s.min, digits), max: round(s.max, digits) };
  }
  median(name: string): number {
    return percentile(this.values.get(name) ?? [Number.NaN], 50);
  }
}
