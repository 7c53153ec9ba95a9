/**
 * The invariants, one catalogue with stable ids: the fault simulator (`npm run chaos`, src/sim) reports its
 * violations by these ids and `eonce run` (src/cli/run/invariants.ts) its checks, so an id means one thing wherever
 * it appears. `title` is the short name; `statement` is what holds. I5 (bad input) is checked by the parsing and
 * adapter suites, and by the simulator's histories for keys that break the key rule (src/sim/hostile-keys.ts).
 */
export const INVARIANT_CATALOGUE = {
  I1: {
    title: "exactly-once effect",
    statement:
      "each event's effect applies at most once, and exactly once when it is delivered until acknowledged; an event is skipped only as a duplicate or stale",
  },
  I2: {
    title: "monotonic",
    statement:
      "per subject the committed position never goes back; fenced sinks never hold an older position than one already written; no zombie write lands",
  },
  I3: {
    title: "liveness",
    statement:
      "no live holder is taken over; a stopped holder blocks its subject for at most lease + clockSkewMs; nothing stalls traffic (a migration, a lock)",
  },
  I4: {
    title: "nothing lost",
    statement:
      "every delivery ends as exactly one outcome and is counted; nothing is acknowledged that no commit backs",
  },
  I5: {
    title: "bad input",
    statement:
      "malformed or foreign input gets a typed error and a defined route, never a crashed batch or an endless retry",
  },
  I6: {
    title: "honest outcomes",
    statement:
      "'we cannot know' is never acknowledged; each step recognises its own landed attempt after a lost response",
  },
  I7: {
    title: "bounded state",
    statement: "a state item stays bounded whatever its history; fences never repeat nor go back per subject",
  },
} as const;

export type InvariantId = keyof typeof INVARIANT_CATALOGUE;
