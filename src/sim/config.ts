import { type FaultConfig, STORE_FAULTS } from "./faults.js";
import type { GuardSettings, HistoryConfig } from "./history-config.js";
import { createPrng } from "./prng.js";

/** The guard as the simulator runs it: short virtual leases, so faults outlast them often. */
export const SIM_GUARD: GuardSettings = {
  leaseMs: 1000,
  heartbeatMs: 300,
  clockSkewMs: 100,
  busy: "wait",
  inFlight: "wait",
  waitIntervalMs: 20,
  maxWaitIntervalMs: 200,
};

/** `default`: memory histories; `small`: DynamoDB Local histories (every request is real I/O). */
export type Profile = "default" | "small";

/**
 * A history's shape, policies, clocks and fault rates, all derived from its seed (so `--replay <seed>` rebuilds
 * it). The faults themselves are drawn while it runs, from the same seed.
 */
export function randomConfig(seed: number, profile: Profile = "default"): HistoryConfig {
  const r = createPrng(seed).fork("config");
  const small = profile === "small";
  const workers = small ? 2 : r.int(2, 3);
  const guard: GuardSettings = {
    ...SIM_GUARD,
    busy: r.pick(["wait", "retry", "supersede"] as const),
    inFlight: r.pick(["wait", "retry"] as const),
  };
  const skew = r.next();
  const offsets = Array.from({ length: workers }, () => 0);
  if (skew >= 0.5) {
    // Within: every pair differs by at most clockSkewMs.
    for (let i = 0; i < workers; i++) offsets[i] = r.int(-guard.clockSkewMs / 2, guard.clockSkewMs / 2);
    // Beyond (1 in 5 of these): one worker's clock is off by more than clockSkewMs.
    if (skew >= 0.9)
      offsets[r.int(0, workers - 1)] = r.pick([-1, 1]) * r.int(guard.clockSkewMs + 60, 3 * guard.leaseMs);
  }
  const faults: FaultConfig = {
    storeRate: r.pick([0.03, 0.08, 0.15]),
    storeKinds: STORE_FAULTS,
    max: r.int(0, 4),
    pauseRate: r.pick([0, 0.1, 0.3]),
    ttlRate: r.pick([0, 0.02, 0.1]),
    duplicateRate: r.pick([0, 0.1, 0.3]),
    reorderWindowMs: r.pick([0, 200, 800]),
  };
  return {
    workers,
    subjects: small ? 1 : r.int(1, 2),
    eventsPerSubject: small ? r.int(1, 2) : r.int(1, 3),
    dedupeEvents: small ? r.int(0, 1) : r.int(0, 2),
    guard,
    offsets,
    faults,
    applyShare: r.pick([0, 0.3, 0.6]),
    directShare: 0.5,
    maxWorkMs: small ? r.pick([50, 400]) : r.pick([50, 400, 1600]),
    source: { visibilityMs: 3000, retryDelayMs: [50, 400], maxReceives: 30, reorder: true },
    extraCopies: r.int(0, 1),
    maxSteps: 20_000,
    maxVirtualMs: 600_000,
  };
}
