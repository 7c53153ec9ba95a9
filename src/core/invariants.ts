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
  // The outbox's (publish at commit, docs/effects.md): the simulator's outbox histories (src/sim/outbox-history.ts).
  O1: {
    title: "published once",
    statement:
      "every message of a committed event is sent at least once, and its consumer's folded effect applies exactly once",
  },
  O2: {
    title: "committed messages only",
    statement:
      "no message of an event that did not commit, nor of a run that did not commit, is ever sent or consumed",
  },
  O3: {
    title: "stable message ids",
    statement:
      "a message's id is fixed at its commit: every send of it carries that id and the committed message",
  },
  O4: {
    title: "commit order",
    statement:
      "a subject's messages are first sent in commit order, and first delivered in it by a FIFO destination",
  },
  O5: {
    title: "outbox drains",
    statement: "once the relays have run to quiescence, no committed message is left unsent in the outbox",
  },
} as const;

export type InvariantId = keyof typeof INVARIANT_CATALOGUE;
