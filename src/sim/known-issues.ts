/**
 * Real violations the simulator found in the guard, all fixed (test/sim/regressions.test.ts replays each one's seeds
 * and expects no violation): still recognised by their pattern, so that a return of one is reported by name rather
 * than as something new. No history shows one today (test/sim/memory.test.ts and exhaustive.test.ts expect none).
 */
export const KNOWN_ISSUES = {
  /**
   * A run's commit is refused because an OLDER event of the subject took its expired claim over; the guard says
   * `lease-lost` (acknowledged), but that holder commits the older event, never this one: this event is lost.
   * Fixed in `refusedBy` (src/core/guard.ts): an older holder makes the outcome `busy` (not acknowledged).
   */
  olderTakerLeaseLost: "lease-lost-to-older-event",
} as const;

export type KnownIssue = (typeof KNOWN_ISSUES)[keyof typeof KNOWN_ISSUES];
