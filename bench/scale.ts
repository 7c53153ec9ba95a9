import type { Report } from "./harness.js";
import type { InjectedRun } from "./injected-latency.js";
import { dynamodbCostPerMillionUsd, PRICES } from "./prices.js";
import { round } from "./stats.js";

/**
 * Scale on paper, computed from a report's measurements: what each implementation costs per month at a steady rate
 * (DynamoDB on demand from its write and read units per new event, Lambda from its p50 at injected latency), and how
 * many events per second one hot key takes before its item's partition (1,000 WCU/s) is the limit.
 */

/** A month as AWS prices one: 730 hours. */
export const SECONDS_PER_MONTH = 730 * 3600;
export const RATES = [1_000, 10_000] as const;
/** Write units per second one partition serves; one item never spans partitions. */
export const PARTITION_WCU_PER_SECOND = 1_000;

export interface MonthlyCost {
  dynamodbUsd: number;
  lambdaUsd: number;
  totalUsd: number;
  /** Partitions the writes need at this rate, at 1,000 WCU/s each (keys spread evenly). */
  writePartitions: number;
}

export interface ScaleRow {
  name: string;
  wcuPerEvent: number;
  rcuPerEvent: number;
  /** Billed Lambda ms per event: the p50 at the reference latency, rounded up to Lambda's 1 ms. */
  lambdaMsPerEvent: number;
  /** The latency the Lambda ms were measured at (one way, ms; 0: the loopback). */
  atOneWayMs: number;
  perMonth: Record<string, MonthlyCost>;
}

/** The injected run closest to 4 ms one way (the AWS-like reference), if any. */
export function referenceRun(report: Report): InjectedRun | undefined {
  const runs = report.injectedLatency ?? [];
  return [...runs].sort((a, b) => Math.abs(a.oneWayMs - 4) - Math.abs(b.oneWayMs - 4))[0];
}

export function monthlyCost(wcu: number, rcu: number, lambdaMs: number, rate: number): MonthlyCost {
  const millions = (rate * SECONDS_PER_MONTH) / 1e6;
  const dynamodbUsd = millions * dynamodbCostPerMillionUsd(wcu, rcu);
  const gbSeconds = (PRICES.lambdaMemoryMb / 1024) * (lambdaMs / 1000);
  const lambdaUsd =
    millions * (PRICES.lambdaRequestPerMillionUsd + gbSeconds * PRICES.lambdaGbSecondUsd * 1e6);
  return {
    dynamodbUsd: Math.round(dynamodbUsd),
    lambdaUsd: Math.round(lambdaUsd),
    totalUsd: Math.round(dynamodbUsd + lambdaUsd),
    writePartitions: Math.ceil((rate * wcu) / PARTITION_WCU_PER_SECOND),
  };
}

/** Every implementation with both a request count and a latency: new events, one invocation each. */
export function scaleRows(report: Report): ScaleRow[] {
  const ref = referenceRun(report);
  const out: ScaleRow[] = [];
  for (const [name, r] of Object.entries(report.requestsPerEvent)) {
    const p50 = ref?.rows[name]?.p50Ms.median ?? report.latency[name]?.p50Ms.median;
    if (p50 === undefined || !r.capacity) continue;
    const lambdaMs = Math.ceil(p50);
    out.push({
      name,
      wcuPerEvent: r.capacity.new.wcu,
      rcuPerEvent: r.capacity.new.rcu,
      lambdaMsPerEvent: lambdaMs,
      atOneWayMs: ref?.rows[name] ? ref.oneWayMs : 0,
      perMonth: Object.fromEntries(
        RATES.map((rate) => [
          String(rate),
          monthlyCost(r.capacity.new.wcu, r.capacity.new.rcu, lambdaMs, rate),
        ]),
      ),
    });
  }
  return out;
}

/** Roles of tables whose items are keyed per event, not per subject: they spread over partitions, a hot key or not. */
const PER_EVENT_ROLES = new Set(["idem"]);

export interface HotKeyLimit {
  name: string;
  /** The table role whose one item takes the most write units per event. */
  hottestRole: string;
  wcuOnHotItem: number;
  /** 1,000 WCU/s ÷ wcuOnHotItem. */
  eventsPerSecond: number;
}

/** The hottest per-subject item of a write-unit breakdown by role, and the rate one partition allows it. */
export function hotItemLimit(
  name: string,
  byRole: Record<string, number> | undefined,
): HotKeyLimit | undefined {
  const hot = Object.entries(byRole ?? {})
    .filter(([role]) => !PER_EVENT_ROLES.has(role))
    .sort((a, b) => b[1] - a[1])[0];
  if (!hot || hot[1] <= 0) return undefined;
  return {
    name,
    hottestRole: hot[0],
    wcuOnHotItem: hot[1],
    eventsPerSecond: Math.floor(PARTITION_WCU_PER_SECOND / hot[1]),
  };
}

/** Per implementation: new events of one key one after another (requests scenario), by write units alone. */
export function sequentialHotKeyLimits(report: Report): HotKeyLimit[] {
  return Object.entries(report.requestsPerEvent)
    .map(([name, r]) => hotItemLimit(name, r.newWcuByRole))
    .filter((l): l is HotKeyLimit => l !== undefined);
}

/** Per hot-key run (busy policy in the name): write units per version delivered at once, contention included. */
export function contendedHotKeyLimits(report: Report): HotKeyLimit[] {
  return Object.entries(report.hotKey)
    .map(([name, h]) => hotItemLimit(name, h.wcuPerVersionByRole))
    .filter((l): l is HotKeyLimit => l !== undefined);
}

/**
 * Lease protocols with busy `wait` or `retry` hold a key from claim to commit: one key then takes at most one event
 * per holding time, whatever the partition allows. The holding time here: a new event's p50 at the reference
 * latency (a 0 ms handler; a real handler's time adds to it).
 */
export function leaseHoldLimit(report: Report, name: string): number | undefined {
  const p50 = referenceRun(report)?.rows[name]?.p50Ms.median;
  return p50 ? Math.floor(1000 / p50) : undefined;
}

export const usd = (n: number) => `$${n.toLocaleString("en-US")}`;
export const r2 = (n: number) => round(n, 2);
