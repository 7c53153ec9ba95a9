/**
 * Real violations the simulator found in the guard, fixed since (test/sim/regressions.test.ts replays each seed):
 * still recognised by their pattern, so that a return of one is reported by name rather than as something new.
 */
export const KNOWN_ISSUES = {
  /**
   * A run's commit is refused because an OLDER event of the subject took its expired claim over; the guard says
   * `lease-lost` (acknowledged), but that holder commits the older event, never this one: this event is lost.
   */
  olderTakerLeaseLost: "lease-lost-to-older-event",
} as const;

export type KnownIssue = (typeof KNOWN_ISSUES)[keyof typeof KNOWN_ISSUES];
